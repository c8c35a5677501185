//! What kind of file something is, in the words every message uses: one
//! wording for the device opener, the job-file reader and the Unix socket
//! binder alike.

use std::fs::FileType;
use std::os::unix::fs::FileTypeExt;

/// File type `t` in words, without an article ("regular file",
/// "directory", "symbolic link", "FIFO", "block device", "character
/// device", "socket"; "special file" for anything else). Every one of them
/// takes "a".
pub fn name(t: &FileType) -> &'static str {
    if t.is_file() {
        "regular file"
    } else if t.is_dir() {
        "directory"
    } else if t.is_symlink() {
        "symbolic link"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_is_there() {
        let kind = |p: &str| std::fs::symlink_metadata(p).map(|m| name(&m.file_type()));
        assert_eq!(kind("/").ok(), Some("directory"));
        assert_eq!(kind("/dev/null").ok(), Some("character device"));
    }
}
