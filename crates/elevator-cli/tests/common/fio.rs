//! Running fio and elevator side by side: scratch directories, commands
//! with a deadline, and fio's JSON.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long one fio or elevator run may take before the test fails.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// The repository's root (where `tests/fio-corpus` is).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A scratch directory, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "elevator-fio-compat-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a scratch directory");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// The path of `name` in the directory, as text for a command line.
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    /// Write `text` to `name` in the directory and return its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).expect("write a scratch file");
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Fail the test, naming Debian's package, unless fio (and the tool
/// shipped with it) can be run. Nothing here is skipped: `scripts/test`
/// installs fio.
pub fn require_fio() {
    if let Err(e) = Command::new("fio").arg("--version").output() {
        panic!(
            "cannot run fio ({e}): install Debian's package fio (apt-get install fio), \
             or run the tests with scripts/test, which installs what they need"
        );
    }
}

/// Run `cmd` (stdin closed) and wait for it, failing the test after
/// [`DEADLINE`]. A program that cannot be started fails the test.
pub fn run(cmd: &mut Command) -> Output {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("waiting for a child") {
            break s;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        status,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    }
}

/// `fio ARGS`, run in `dir`.
pub fn fio(dir: &Path, args: &[&str]) -> Output {
    run(Command::new("fio").current_dir(dir).args(args))
}

/// `elevator ARGS` (the binary cargo built for these tests), run in `dir`.
pub fn elevator(dir: &Path, args: &[&str]) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(dir)
        .args(args))
}

/// stdout, which must come from a run that succeeded.
pub fn stdout_ok(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The JSON document in `text` (what comes before the first `{`, such as
/// fio's notes, is skipped).
pub fn json(what: &str, text: &str) -> serde_json::Value {
    let start = text
        .find('{')
        .unwrap_or_else(|| panic!("{what}: no JSON in:\n{text}"));
    serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("{what}: bad JSON: {e}\n{text}"))
}

/// A small deterministic PRNG (splitmix64), so generated inputs are the
/// same on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent` %.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
