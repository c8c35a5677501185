//! A closed stdout (or stderr) ends any command quietly, as it ends Unix
//! tools (`elevator schedulers | head -1`): the process dies by SIGPIPE,
//! so a shell sees status 141 and nothing is printed.
//!
//! elevator keeps SIGPIPE ignored, as Rust programs start: the NBD server
//! writes to its clients' sockets and the mark client to the mark socket
//! with plain write(2), and a peer that hangs up must give them an error
//! (EPIPE), not kill the process. So a write to a stdout whose reader is
//! gone fails with EPIPE too: `println!` panics on it, and an explicit
//! write returns the error. [`install`] catches the first (a panic hook)
//! and [`exit_if_closed`] the second (main's error); both end the process
//! by SIGPIPE only when stdout's reader is really gone (poll reports an
//! error on descriptor 1), so a broken pipe on a socket is still reported
//! as the error it is.

use std::os::fd::{AsFd, BorrowedFd};
use std::panic::PanicHookInfo;

/// Make a panic from printing to a closed stdout (or stderr: `serve`'s
/// log lines under `2>&1 | head`) end the process by SIGPIPE instead of
/// printing a panic message, and one from any other failure to print (a
/// full disk: `> /dev/full`) end it with the error and status 1; other
/// panics go on to the hook that was there.
pub fn install() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let failed = print_failure(info);
        let gone = match failed {
            Some((Stream::Stdout, _)) => reader_gone(std::io::stdout().as_fd()),
            Some((Stream::Stderr, _)) => reader_gone(std::io::stderr().as_fd()),
            None => false,
        };
        if gone {
            die_by_sigpipe();
        }
        match failed {
            Some((Stream::Stdout, why)) => {
                eprintln!("elevator: error: writing to standard output: {why}");
                std::process::exit(1)
            }
            // Nowhere left to say it.
            Some((Stream::Stderr, _)) => std::process::exit(1),
            None => previous(info),
        }
    }));
}

/// The standard stream a `print!` or `eprint!` failed on.
enum Stream {
    Stdout,
    Stderr,
}

/// End the process by SIGPIPE if `err` comes from writing to a stdout
/// whose reader is gone; otherwise return.
pub fn exit_if_closed(err: &anyhow::Error) {
    // serde_json wraps the write's error in its own type: `elevator
    // compare --output-format json | head -3` fails there.
    let broken_pipe = err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || e.downcast_ref::<serde_json::Error>()
                .is_some_and(|e| e.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    });
    if broken_pipe && reader_gone(std::io::stdout().as_fd()) {
        die_by_sigpipe();
    }
}

/// Whether the panic is `print!`'s (or `eprint!`'s) failure to write: to
/// which stream, and why.
fn print_failure<'a>(info: &'a PanicHookInfo<'_>) -> Option<(Stream, &'a str)> {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))?;
    if let Some(why) = message.strip_prefix("failed printing to stdout: ") {
        Some((Stream::Stdout, why))
    } else if let Some(why) = message.strip_prefix("failed printing to stderr: ") {
        Some((Stream::Stderr, why))
    } else {
        None
    }
}

/// Whether `fd` is a pipe or socket with no one reading it: poll reports
/// POLLERR (a pipe without readers) or POLLHUP (a socket whose peer is
/// gone).
fn reader_gone(fd: BorrowedFd<'_>) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::from_borrowed_fd(fd, PollFlags::OUT)];
    let now = Timespec::default();
    rustix::event::poll(&mut fds, Some(&now)).is_ok()
        && fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP)
}

/// Die as a Unix tool does on a closed pipe: by SIGPIPE, its default
/// action restored first.
fn die_by_sigpipe() -> ! {
    let _ = signal_hook::low_level::emulate_default_handler(signal_hook::consts::SIGPIPE);
    // Not reached: the signal ends the process. The shell's status for it.
    std::process::exit(128 + signal_hook::consts::SIGPIPE)
}
