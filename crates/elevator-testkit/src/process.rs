//! Outside commands and child processes run by the tests: started (a
//! program that is not installed fails the test, naming its package; never
//! a skip) and waited for with a deadline that only bounds a hang.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use crate::programs::missing;

/// Start `cmd`. A program that is not installed fails the test with
/// [`missing`]'s message; any other failure to start it fails it too.
pub fn spawn(cmd: &mut Command) -> Child {
    match cmd.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("{}", missing(&cmd.get_program().to_string_lossy()))
        }
        Err(e) => panic!("cannot run {cmd:?}: {e}"),
    }
}

/// Run `cmd` (stdin closed, its output collected) to completion; killed,
/// and the test failed, after `deadline`. A program that is not installed
/// fails the test, naming its package.
pub fn run_with_deadline(cmd: &mut Command, deadline: Duration) -> Output {
    let mut child = spawn(
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let what = format!("{cmd:?}");
    let out_t = collect(child.stdout.take());
    let err_t = collect(child.stderr.take());
    let status = wait_with_deadline(&mut child, deadline, &what);
    Output {
        status,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    }
}

/// The stdout of `out`, which must come from a run (`what`) that succeeded:
/// otherwise the test fails, showing both outputs.
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

/// Wait for `child` (`what`, for the message) to exit; past `deadline` it
/// is killed and the test fails.
pub fn wait_with_deadline(child: &mut Child, deadline: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status,
            Ok(None) => {}
            Err(e) => panic!("waiting for {what}: {e}"),
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Poll `f` until it gives a value, pausing a little longer each time (up
/// to 50 ms); past `deadline` the test fails, saying what was awaited.
/// Nothing sleeps for correctness: the deadline only bounds a hang.
pub fn wait_for<T>(what: &str, deadline: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < deadline,
            "timed out after {deadline:?} waiting for {what}"
        );
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Read `pipe` to its end on a thread of its own.
fn collect(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut v);
        }
        v
    })
}
