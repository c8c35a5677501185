//! Error numbers as fio speaks of them: the names `ignore_error` takes
//! (`EIO`, `ENOSPC`, ...), and the text its reports put after `err=`
//! (glibc's `strerror`), for the errors elevator's devices and checks can
//! produce and the ones fio's option names.
//!
//! Pure: a table, no `libc`.

/// `EIO`: an I/O error.
pub const EIO: i32 = 5;
/// `EINVAL`: an invalid argument (a log that cannot be replayed).
pub const EINVAL: i32 = 22;
/// `EILSEQ`: what fio reports for a block that did not verify.
pub const EILSEQ: i32 = 84;

/// The errors fio's `ignore_error` knows by name (its `str2error` table,
/// `EPERM` to `ERANGE`: errno 1 to 34), then the ones elevator's devices
/// and checks produce beyond them. `(errno, name, strerror text)`.
const TABLE: &[(i32, &str, &str)] = &[
    (1, "EPERM", "Operation not permitted"),
    (2, "ENOENT", "No such file or directory"),
    (3, "ESRCH", "No such process"),
    (4, "EINTR", "Interrupted system call"),
    (5, "EIO", "Input/output error"),
    (6, "ENXIO", "No such device or address"),
    (7, "E2BIG", "Argument list too long"),
    (8, "ENOEXEC", "Exec format error"),
    (9, "EBADF", "Bad file descriptor"),
    (10, "ECHILD", "No child processes"),
    (11, "EAGAIN", "Resource temporarily unavailable"),
    (12, "ENOMEM", "Cannot allocate memory"),
    (13, "EACCES", "Permission denied"),
    (14, "EFAULT", "Bad address"),
    (15, "ENOTBLK", "Block device required"),
    (16, "EBUSY", "Device or resource busy"),
    (17, "EEXIST", "File exists"),
    (18, "EXDEV", "Invalid cross-device link"),
    (19, "ENODEV", "No such device"),
    (20, "ENOTDIR", "Not a directory"),
    (21, "EISDIR", "Is a directory"),
    (22, "EINVAL", "Invalid argument"),
    (23, "ENFILE", "Too many open files in system"),
    (24, "EMFILE", "Too many open files"),
    (25, "ENOTTY", "Inappropriate ioctl for device"),
    (26, "ETXTBSY", "Text file busy"),
    (27, "EFBIG", "File too large"),
    (28, "ENOSPC", "No space left on device"),
    (29, "ESPIPE", "Illegal seek"),
    (30, "EROFS", "Read-only file system"),
    (31, "EMLINK", "Too many links"),
    (32, "EPIPE", "Broken pipe"),
    (33, "EDOM", "Numerical argument out of domain"),
    (34, "ERANGE", "Numerical result out of range"),
    // Beyond fio's names: what elevator's devices and checks report.
    (
        84,
        "EILSEQ",
        "Invalid or incomplete multibyte or wide character",
    ),
    (95, "EOPNOTSUPP", "Operation not supported"),
    (110, "ETIMEDOUT", "Connection timed out"),
    (125, "ECANCELED", "Operation canceled"),
];

/// The largest error number `ignore_error` takes (Linux's are below it).
pub const MAX_ERRNO: i32 = 4095;

/// The error number of `name` (`EIO`), if this table has it.
pub fn from_name(name: &str) -> Option<i32> {
    TABLE.iter().find(|(_, n, _)| *n == name).map(|&(e, ..)| e)
}

/// The name of `errno` (`EIO`), if known.
pub fn name(errno: i32) -> Option<&'static str> {
    TABLE.iter().find(|(e, ..)| *e == errno).map(|&(_, n, _)| n)
}

/// What glibc's `strerror` says of `errno` (`Unknown error N` for the
/// rest, as glibc does).
pub fn describe(errno: i32) -> String {
    if errno == 0 {
        return "Success".to_string();
    }
    match TABLE.iter().find(|(e, ..)| *e == errno) {
        Some(&(_, _, text)) => text.to_string(),
        None => format!("Unknown error {errno}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_texts_agree() {
        assert_eq!(from_name("EIO"), Some(EIO));
        assert_eq!(from_name("ENOSPC"), Some(28));
        assert_eq!(name(EILSEQ), Some("EILSEQ"));
        assert_eq!(describe(28), "No space left on device");
        assert_eq!(describe(4000), "Unknown error 4000");
        assert_eq!(from_name("EFOO"), None);
    }
}
