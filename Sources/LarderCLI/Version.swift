extension LarderCommand {
    /// The version of Larder this tool was built from, as `larder --version` prints it: the
    /// version CHANGELOG.md names first (`VersionAndCompletionTests` checks that they agree).
    public static let version = "0.1.0"
}
