/// The command-line tool's implementation.
public enum LarderCommand {}
