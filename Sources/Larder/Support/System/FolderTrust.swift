/// Whom the folders and files beneath a cache's root must belong to before the cache trusts
/// them: the rule the root itself is held to, applied to every shard folder, the temporary
/// folder and every file the cache reads.
///
/// A folder is what guards the names in it: whoever owns it, or may write it, can replace any
/// file in it at any moment, so a record read from such a folder (or written into it) could be
/// anyone's. A file's owner, or anyone who may write it, can change its bytes.
package struct FolderTrust: Sendable, Hashable {
    /// Whether the cache is shared with its group (``CacheSharing/group``): any owner and group
    /// write are accepted, write by others never.
    package var sharedWithGroup: Bool
    /// Whether the root's owner is trusted as well as this user: a read-only cache reads whoever's
    /// folder it was pointed at, but not a third user's folder inside it. Group write is then
    /// accepted too where the root grants it (group-writable, not writable by others): the group
    /// could replace anything beneath such a root already.
    package var acceptsRootOwner: Bool

    package init(sharedWithGroup: Bool, acceptsRootOwner: Bool) {
        self.sharedWithGroup = sharedWithGroup
        self.acceptsRootOwner = acceptsRootOwner
    }

    /// What is wrong with a folder or file that `fstat` described as `info`, beneath a root
    /// that `fstat` described as `root`: `nil` when the cache may trust it, else a phrase for an
    /// error message ("belongs to user 65534, not to this user", "is writable by group or others
    /// (mode 777)").
    package func problem(with info: FileInfo, root: FileInfo) -> String? {
        if !sharedWithGroup, info.ownerID != ProcessIdentity.effectiveUserID,
            !acceptsRootOwner || info.ownerID != root.ownerID
        {
            return "belongs to user \(info.ownerID), not to this user"
        }
        let groupMayWrite = sharedWithGroup || acceptsRootOwner && root.permissions & 0o022 == 0o020
        let forbidden: UInt16 = groupMayWrite ? 0o002 : 0o022
        if info.permissions & forbidden != 0 {
            return "is writable by \(groupMayWrite ? "others" : "group or others") (mode \(String(info.permissions, radix: 8)))"
        }
        return nil
    }
}
