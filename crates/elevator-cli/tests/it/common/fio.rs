//! Running fio and elevator side by side: scratch directories, commands
//! with a deadline, and fio's JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

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

/// Run `cmd` (stdin closed) and wait for it, failing the test after
/// [`DEADLINE`]. A program that cannot be started fails the test.
pub fn run(cmd: &mut Command) -> Output {
    elevator_testkit::run_with_deadline(cmd, DEADLINE)
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

pub use elevator_testkit::stdout_ok;

/// The JSON document in `text` (what comes before the first `{`, such as
/// fio's notes, is skipped).
pub fn json(what: &str, text: &str) -> serde_json::Value {
    let start = text
        .find('{')
        .unwrap_or_else(|| panic!("{what}: no JSON in:\n{text}"));
    serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("{what}: bad JSON: {e}\n{text}"))
}

pub use elevator_testkit::TestRng as Rng;
