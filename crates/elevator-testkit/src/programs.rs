//! The outside programs the tests run and the Debian package that installs
//! each: one table, `programs.txt`, which `scripts/test` reads too (to
//! install what is missing), and what a test says when one is missing.

/// `programs.txt`: "program package" a line, `#` comments.
const TABLE: &str = include_str!("../programs.txt");

/// The Debian package that installs `program`, for the programs the tests
/// run.
pub fn package_of(program: &str) -> Option<&'static str> {
    TABLE
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (name, package) = line.split_once(' ')?;
            (name == program).then(|| package.trim())
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

/// Whether `program` (a name looked up in `PATH`, or a path) is an
/// executable file here.
pub fn installed(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return runnable(std::path::Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| runnable(&dir.join(program))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_program_has_one_package() {
        assert_eq!(package_of("nbdcopy"), Some("libnbd-bin"));
        assert_eq!(package_of("btt"), Some("blktrace"));
        assert_eq!(package_of("cargo"), None);
        assert!(installed("/bin/sh") || !std::path::Path::new("/bin/sh").exists());
        assert!(!installed("elevator-no-such-program"));
        for line in TABLE.lines().filter(|l| !l.starts_with('#')) {
            assert_eq!(line.split(' ').count(), 2, "{line:?}");
        }
    }
}
