//! Which Debian package installs each program the NBD and CLI tests run,
//! and what a test says when one is missing. Shared by the elevator-nbd
//! tests (`common`) and the elevator-cli serve tests (by path), so the
//! table is kept once.

/// The Debian package that installs `program`, for tools the tests run.
pub fn package_of(program: &str) -> Option<&'static str> {
    Some(match program {
        "nbdinfo" | "nbdcopy" | "nbdfuse" | "nbdsh" => "libnbd-bin",
        "nbdkit" => "nbdkit",
        "qemu-img" | "qemu-nbd" | "qemu-io" => "qemu-utils",
        "fio" => "fio",
        "fusermount3" => "fuse3",
        "mkfs.ext4" | "fsck.ext4" | "e2fsck" => "e2fsprogs",
        "losetup" | "mount" | "umount" => "mount",
        "openssl" => "openssl",
        _ => return None,
    })
}

/// What to say when `program` is not installed: its name, the package to
/// install, and `scripts/test`, which installs them all.
pub fn missing(program: &str) -> String {
    let install = match package_of(program) {
        Some(p) => format!("install the Debian package {p} (apt-get install {p})"),
        None => "install it".to_string(),
    };
    format!(
        "{program} is not installed, and this test needs it: {install}, or run the tests \
         with scripts/test, which installs every tool they use"
    )
}
