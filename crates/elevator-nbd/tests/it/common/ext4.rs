//! A file system over NBD: `nbdfuse` turns an export into a file, a loop
//! device turns that into a block device, and ext4 goes on it. Used by the
//! interop and multi-connection tests ([`round_trip`]), and by the test of
//! 512-byte direct I/O through a loop device ([`sectors_direct`]); what the
//! kernel may refuse (no root,
//! no FUSE, no loop devices, mount denied) comes back as `Err(why)` so the
//! test can skip, and any other failure panics.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The programs this module runs (for `elevator_testkit::needs!`).
pub const TOOLS: &[&str] = &[
    "nbdfuse",
    "fusermount3",
    "mkfs.ext4",
    "fsck.ext4",
    "losetup",
    "mount",
    "umount",
];

use super::{DEADLINE, TempDir, pattern, run, run_ok, wait_for};

const MIB: u64 = 1 << 20;

/// Why this process may not mount things, if it may not.
pub fn cannot_mount() -> Option<String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("?");
    if euid != "0" {
        return Some(format!(
            "not root (effective uid {euid}): loop devices and mount need root"
        ));
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse does not exist: the kernel offers no FUSE here".into());
    }
    None
}

fn denied(stderr: &str) -> bool {
    let s = stderr.to_ascii_lowercase();
    s.contains("permission denied") || s.contains("operation not permitted")
}

/// An `nbdfuse` process and its mount; unmounted and waited for on drop.
struct Fuse {
    dir: PathBuf,
    child: Child,
    stderr: PathBuf,
}

impl Fuse {
    /// Mount `uri` on `dir` (its file is `dir/nbd`). `Err` says why the
    /// kernel refused FUSE; other failures panic.
    fn mount(
        dir: &Path,
        uri: &str,
        read_only: bool,
        work: &TempDir,
        n: u32,
    ) -> Result<Fuse, String> {
        let pidfile = work.path().join(format!("nbdfuse{n}.pid"));
        let stderr = work.path().join(format!("nbdfuse{n}.err"));
        // Unmounting needs it: check now, not in a clean-up.
        super::require("fusermount3");
        let mut cmd = Command::new("nbdfuse");
        cmd.arg("-P").arg(&pidfile);
        if read_only {
            cmd.arg("-r");
        }
        let child = super::spawn(
            cmd.arg(dir)
                .arg(uri)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&stderr).expect("stderr file")),
        );
        let mut fuse = Fuse {
            dir: dir.to_path_buf(),
            child,
            stderr,
        };
        // Ready once it has written its pid file; failed if it exits first.
        let ready = wait_for("nbdfuse to mount", || {
            if std::fs::read_to_string(&pidfile).is_ok_and(|s| s.trim().parse::<u32>().is_ok()) {
                return Some(true);
            }
            match fuse.child.try_wait() {
                Ok(Some(_)) => Some(false),
                _ => None,
            }
        });
        if ready {
            return Ok(fuse);
        }
        let err = std::fs::read_to_string(&fuse.stderr).unwrap_or_default();
        if denied(&err) || err.contains("/dev/fuse") || err.contains("fuse: device not found") {
            return Err(format!("nbdfuse could not mount: {}", err.trim()));
        }
        panic!("nbdfuse failed: {err}");
    }

    fn file(&self) -> PathBuf {
        self.dir.join("nbd")
    }

    fn unmount(mut self) {
        self.unmount_quietly();
        let status = self.child.try_wait().ok().flatten();
        assert!(
            status.is_some_and(|s| s.success()),
            "nbdfuse exited with {status:?}"
        );
    }

    fn unmount_quietly(&mut self) {
        let _ = Command::new("fusermount3")
            .arg("-u")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let start = Instant::now();
        while self.child.try_wait().ok().flatten().is_none() {
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Fuse {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.unmount_quietly();
        }
    }
}

/// A loop device, detached on drop.
struct Loop(String);

impl Loop {
    fn attach(file: &Path, read_only: bool) -> Result<Loop, String> {
        let mut cmd = Command::new("losetup");
        cmd.arg("--find").arg("--show");
        if read_only {
            cmd.arg("--read-only");
        }
        let out = run(cmd.arg(file));
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if !out.status.success() {
            // losetup reads nothing from the file: a failure here is the
            // kernel's (no loop devices, or not allowed).
            return Err(format!("losetup failed: {}", stderr.trim()));
        }
        Ok(Loop(
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
        ))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = run(Command::new("losetup").arg("-d").arg(&self.0));
    }
}

/// A mounted filesystem, unmounted on drop.
struct Mount(PathBuf);

impl Mount {
    fn new(dev: &str, dir: &Path, read_only: bool) -> Result<Mount, String> {
        let mut cmd = Command::new("mount");
        cmd.args(["-t", "ext4"]);
        if read_only {
            cmd.args(["-o", "ro"]);
        }
        let out = run(cmd.arg(dev).arg(dir));
        if out.status.success() {
            return Ok(Mount(dir.to_path_buf()));
        }
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        if denied(&stderr) {
            return Err(format!("mount was refused: {}", stderr.trim()));
        }
        panic!("mounting {dev}: {stderr}");
    }

    fn unmount(mut self) {
        run_ok(Command::new("umount").arg(&self.0));
        self.0 = PathBuf::new();
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if !self.0.as_os_str().is_empty() {
            let _ = run(Command::new("umount").arg("-l").arg(&self.0));
        }
    }
}

fn fsck_clean(dev: &str) {
    let out = run(Command::new("fsck.ext4").args(["-n", "-f"]).arg(dev));
    assert!(
        out.status.success(),
        "fsck.ext4 -n -f {dev} found problems ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Make ext4 on the export at `uri` (64 MiB) through nbdfuse and a loop
/// device, write files, unmount, check it with fsck; then mount it again
/// through a new nbdfuse (no cache), read-only, and check the files came
/// back. `work` holds the mount points and nbdfuse's files. `Err` says why
/// the kernel refused (the caller skips).
pub fn round_trip(uri: &str, work: &TempDir) -> Result<(), String> {
    if let Some(why) = cannot_mount() {
        return Err(why);
    }
    let (fuse_dir, mnt) = (work.path().join("fuse"), work.path().join("mnt"));
    std::fs::create_dir(&fuse_dir).expect("mkdir");
    std::fs::create_dir(&mnt).expect("mkdir");
    let files: Vec<(String, Vec<u8>)> = vec![
        (
            "hello.txt".into(),
            b"hello from elevator over NBD\n".to_vec(),
        ),
        ("one.bin".into(), pattern(21, 1 << 20)),
        ("five.bin".into(), pattern(22, 5 << 20)),
        ("odd.bin".into(), pattern(23, 12_345)),
    ];

    // Make a filesystem and write the files.
    {
        let fuse = Fuse::mount(&fuse_dir, uri, false, work, 1)?;
        let size = std::fs::metadata(fuse.file())
            .expect("stat the nbdfuse file")
            .len();
        assert_eq!(size, 64 * MIB);
        let dev = Loop::attach(&fuse.file(), false)?;
        run_ok(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&dev.0));
        let m = Mount::new(&dev.0, &mnt, false)?;
        for (name, data) in &files {
            std::fs::write(mnt.join(name), data).expect("writing a file");
        }
        run_ok(&mut Command::new("sync"));
        m.unmount();
        fsck_clean(&dev.0);
        drop(dev);
        fuse.unmount();
    }
    // Everything went through to the server: a new nbdfuse (no cache) sees
    // a clean filesystem with the same files.
    {
        let fuse = Fuse::mount(&fuse_dir, uri, true, work, 2)?;
        let dev = Loop::attach(&fuse.file(), true)?;
        fsck_clean(&dev.0);
        let m = Mount::new(&dev.0, &mnt, true)?;
        for (name, data) in &files {
            let got = std::fs::read(mnt.join(name)).expect("reading a file back");
            assert!(got == *data, "{name} came back different");
        }
        m.unmount();
        drop(dev);
        fuse.unmount();
    }
    Ok(())
}

/// Through nbdfuse and a loop device over the export at `uri`, write
/// 512-byte sectors with `dd oflag=direct` (as the kernel's block layer
/// sends them) at `sectors`, each `pattern(500 + sector, 512)`, and read
/// each back with `iflag=direct`. `Err` says why the kernel refused (the
/// caller skips); a failed `dd` or wrong data panics.
pub fn sectors_direct(uri: &str, work: &TempDir, sectors: &[u64]) -> Result<(), String> {
    if let Some(why) = cannot_mount() {
        return Err(why);
    }
    let fuse_dir = work.path().join("fuse");
    std::fs::create_dir(&fuse_dir).expect("mkdir");
    let fuse = Fuse::mount(&fuse_dir, uri, false, work, 1)?;
    let dev = Loop::attach(&fuse.file(), false)?;
    for &s in sectors {
        let src = work.path().join(format!("sector{s}"));
        std::fs::write(&src, pattern(500 + s, 512)).expect("writing the sector's data");
        run_ok(
            Command::new("dd")
                .arg(format!("if={}", src.display()))
                .arg(format!("of={}", dev.0))
                .args(["bs=512", "oflag=direct", "conv=notrunc"])
                .arg(format!("seek={s}")),
        );
    }
    for &s in sectors {
        let back = work.path().join(format!("back{s}"));
        run_ok(
            Command::new("dd")
                .arg(format!("if={}", dev.0))
                .arg(format!("of={}", back.display()))
                .args(["bs=512", "count=1", "iflag=direct"])
                .arg(format!("skip={s}")),
        );
        let got = std::fs::read(&back).expect("reading the sector back");
        assert!(got == pattern(500 + s, 512), "sector {s} read back wrong");
    }
    drop(dev);
    fuse.unmount();
    Ok(())
}
