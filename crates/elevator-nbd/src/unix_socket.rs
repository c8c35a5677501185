//! Binding a Unix socket's path without taking another server's: the one
//! place that decides whether a path may be bound (nothing is there, or a
//! socket that no server answers on) and, when the listener closes,
//! whether the path is still ours to remove. `elevator serve --unix` and
//! `--mark-socket` both bind through [`bind_unix`].
//!
//! A socket file outlives its server: a server killed with SIGKILL leaves
//! one that nothing answers on (connecting is refused), and binding over
//! it needs it removed first. A live server's socket must not be removed:
//! its clients would lose it, and it would go on listening on a path that
//! reaches nothing. So a socket is probed with a connection first, and
//! only a refused one is removed; anything that is not a socket (a file
//! named by mistake) is never removed.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
use thiserror::Error;

/// Why a Unix socket's path cannot be bound.
#[derive(Debug, Error)]
pub enum UnixBindError {
    /// A server answers on the path.
    #[error("a server is listening on it (Address already in use)")]
    InUse,
    /// Something other than a socket is at the path.
    #[error("it is a {0}, not a socket: refusing to replace it")]
    NotASocket(&'static str),
    /// A step of binding failed.
    #[error("{step}")]
    Io {
        /// What was being done.
        step: &'static str,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
}

impl UnixBindError {
    /// The [`io::ErrorKind`] it amounts to.
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            UnixBindError::InUse => io::ErrorKind::AddrInUse,
            UnixBindError::NotASocket(_) => io::ErrorKind::AlreadyExists,
            UnixBindError::Io { source, .. } => source.kind(),
        }
    }
}

impl From<UnixBindError> for io::Error {
    fn from(e: UnixBindError) -> io::Error {
        io::Error::new(e.kind(), e)
    }
}

/// The file a bound Unix socket made: its path, and which file it was
/// when bound (device, inode, and birth time where the file system keeps
/// one: an inode number freed by a removal is soon given again).
/// Dropping it removes the path if it is still that socket, and leaves it
/// alone if someone else's is there now.
#[derive(Debug)]
pub struct UnixSocketFile {
    path: PathBuf,
    identity: FileIdentity,
}

/// Which file a path named: device, inode, birth time.
#[derive(Debug, PartialEq, Eq)]
struct FileIdentity {
    dev: u64,
    ino: u64,
    born: Option<std::time::SystemTime>,
}

impl FileIdentity {
    fn of(m: &std::fs::Metadata) -> FileIdentity {
        FileIdentity {
            dev: m.dev(),
            ino: m.ino(),
            born: m.created().ok(),
        }
    }
}

impl UnixSocketFile {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path, for printing (as [`Path::display`]).
    pub fn display(&self) -> std::path::Display<'_> {
        self.path.display()
    }

    /// Whether the path is still the socket we bound.
    pub fn is_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.path)
            .is_ok_and(|m| m.file_type().is_socket() && FileIdentity::of(&m) == self.identity)
    }
}

impl Drop for UnixSocketFile {
    fn drop(&mut self) {
        if self.is_ours() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Bind a listening Unix socket at `path`: refused when a server answers
/// there or when something other than a socket is there; a stale socket
/// (one that refuses connections) is removed first.
pub fn bind_unix(path: &Path) -> Result<(UnixListener, UnixSocketFile), UnixBindError> {
    let io = |step| move |source| UnixBindError::Io { step, source };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("looking at what is there")(e)),
        Ok(m) if !m.file_type().is_socket() => {
            return Err(UnixBindError::NotASocket(elevator_io::file_kind::name(
                &m.file_type(),
            )));
        }
        Ok(before) => {
            if answers(path).map_err(io("probing the socket already there"))? {
                return Err(UnixBindError::InUse);
            }
            // Stale. Remove it only if it is still the socket probed: one
            // bound meanwhile by another server is that server's.
            match std::fs::symlink_metadata(path) {
                Ok(now) if FileIdentity::of(&now) == FileIdentity::of(&before) => {
                    match std::fs::remove_file(path) {
                        Err(e) if e.kind() != io::ErrorKind::NotFound => {
                            return Err(io("removing the stale socket")(e));
                        }
                        _ => {}
                    }
                }
                Ok(_) => return Err(UnixBindError::InUse),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io("looking at what is there")(e)),
            }
        }
    }
    // A server that bound the path since is refused here (EADDRINUSE).
    let listener = UnixListener::bind(path).map_err(io("binding"))?;
    let m = std::fs::symlink_metadata(path).map_err(io("looking at the bound socket"))?;
    Ok((
        listener,
        UnixSocketFile {
            path: path.to_path_buf(),
            identity: FileIdentity::of(&m),
        },
    ))
}

/// Whether a server answers on the socket at `path`: a connection is
/// accepted, or would wait (the server's backlog is full). Refused (or
/// gone) means stale. Nonblocking, so a full backlog cannot hang it.
fn answers(path: &Path) -> io::Result<bool> {
    let fd = rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )?;
    let addr = SocketAddrUnix::new(path)?;
    match rustix::net::connect(&fd, &addr) {
        Ok(()) | Err(Errno::AGAIN | Errno::INPROGRESS) => Ok(true),
        Err(Errno::CONNREFUSED | Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("elevator-nbd-unix-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).expect("a temporary directory");
        d
    }

    #[test]
    fn a_live_socket_is_refused_and_kept() {
        let d = dir("live");
        let p = d.join("s.sock");
        let (first, file) = bind_unix(&p).expect("binding a fresh path");
        let e = bind_unix(&p).expect_err("a live socket is refused");
        assert!(matches!(e, UnixBindError::InUse), "{e}");
        assert_eq!(io::Error::from(e).kind(), io::ErrorKind::AddrInUse);
        assert!(file.is_ours(), "the first server's socket is still there");
        assert!(std::os::unix::net::UnixStream::connect(&p).is_ok());
        drop((first, file));
        assert!(!p.exists(), "its own socket is removed when dropped");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_stale_socket_is_replaced_and_other_files_are_refused() {
        let d = dir("stale");
        let p = d.join("s.sock");
        // A socket whose listener is gone, as a SIGKILLed server leaves.
        drop(UnixListener::bind(&p).expect("binding"));
        assert!(p.exists());
        let (_l, file) = bind_unix(&p).expect("a stale socket is replaced");
        assert!(file.is_ours());
        drop(file);

        let f = d.join("notes.txt");
        std::fs::write(&f, "keep me").expect("writing a file");
        let e = bind_unix(&f).expect_err("a regular file is refused");
        assert_eq!(
            e.to_string(),
            "it is a regular file, not a socket: refusing to replace it"
        );
        assert_eq!(std::fs::read_to_string(&f).ok().as_deref(), Some("keep me"));
        let e = bind_unix(&d).expect_err("a directory is refused");
        assert!(e.to_string().contains("directory"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_replaced_socket_is_not_removed() {
        let d = dir("replaced");
        let p = d.join("s.sock");
        let (l, file) = bind_unix(&p).expect("binding");
        drop(l);
        // Someone else's socket takes the path: bound beside it and renamed
        // over it (so that it cannot have our inode number).
        let beside = d.join("other.sock");
        let other = UnixListener::bind(&beside).expect("another server binds");
        std::fs::rename(&beside, &p).expect("renaming");
        assert!(!file.is_ours());
        drop(file);
        assert!(p.exists(), "the other server's socket stays");
        drop(other);
        let _ = std::fs::remove_dir_all(&d);
    }
}
