//! The recorded command: forked and held before its exec until the events that follow it are
//! open (they enable themselves at the exec, so the recording starts with the program, not
//! with profkit's fork), then waited for.
//!
//! Between fork and exec the child only calls async-signal-safe functions (`read`, `execve`,
//! `write`, `_exit`): everything it needs — the program's path, argv and environment as C
//! strings — is made before the fork.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A forked command waiting for [`Workload::start`].
pub struct Workload {
    /// Its process id.
    pub pid: i32,
    go: Option<OwnedFd>,
    exec_error: OwnedFd,
}

/// How the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// It exited with this status.
    Exited(i32),
    /// A signal ended it.
    Signaled(i32),
}

impl Ended {
    /// The exit status a shell gives it (128 + signal for a signal).
    pub fn code(self) -> i32 {
        match self {
            Ended::Exited(c) => c,
            Ended::Signaled(s) => 128 + s,
        }
    }
}

/// `program` found as a shell would: a path with a slash as it is, else the first executable
/// file of that name in `PATH`.
pub fn resolve(program: &OsStr) -> Option<PathBuf> {
    let p = Path::new(program);
    if program.as_bytes().contains(&b'/') {
        return Some(p.to_path_buf());
    }
    let path =
        std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(&path)
        .map(|d| d.join(p))
        .find(|c| is_executable(c))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{}: contains a NUL byte", s.to_string_lossy()),
        )
    })
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two new descriptors this process owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Workload {
    /// Forks `program` (resolved) with `args` (argv[0] included) and `env`, held before its
    /// exec.
    pub fn fork(
        program: &Path,
        args: &[OsString],
        env: &[(OsString, OsString)],
    ) -> io::Result<Workload> {
        let path = cstring(program.as_os_str())?;
        let argv: Vec<CString> = args.iter().map(|a| cstring(a)).collect::<io::Result<_>>()?;
        let envp: Vec<CString> = env
            .iter()
            .map(|(k, v)| {
                let mut kv = k.clone();
                kv.push("=");
                kv.push(v);
                cstring(&kv)
            })
            .collect::<io::Result<_>>()?;
        let mut argv_ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_ptrs.push(std::ptr::null());
        let mut envp_ptrs: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
        envp_ptrs.push(std::ptr::null());
        let (go_read, go_write) = pipe()?;
        let (err_read, err_write) = pipe()?;
        // SAFETY: the child calls only async-signal-safe functions on memory prepared above.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // SAFETY: async-signal-safe calls only, then exec or _exit.
            unsafe {
                let mut byte = 0u8;
                let n = libc::read(go_read.as_raw_fd(), (&mut byte as *mut u8).cast(), 1);
                if n == 1 {
                    libc::execve(path.as_ptr(), argv_ptrs.as_ptr(), envp_ptrs.as_ptr());
                    let errno = *libc::__errno_location();
                    let b = errno.to_ne_bytes();
                    libc::write(err_write.as_raw_fd(), b.as_ptr().cast(), b.len());
                }
                libc::_exit(127);
            }
        }
        drop(go_read);
        drop(err_write);
        Ok(Workload {
            pid,
            go: Some(go_write),
            exec_error: err_read,
        })
    }

    /// Lets the command exec. An exec that fails (not found, not executable) is the error.
    pub fn start(&mut self) -> io::Result<()> {
        if let Some(go) = self.go.take() {
            let b = [1u8];
            // SAFETY: a one-byte write to our end of the pipe.
            if unsafe { libc::write(go.as_raw_fd(), b.as_ptr().cast(), 1) } != 1 {
                return Err(io::Error::last_os_error());
            }
        }
        let mut errno = [0u8; 4];
        // SAFETY: reads at most 4 bytes into the array; EOF (0) means the exec happened (the
        // pipe is close-on-exec).
        let n = unsafe { libc::read(self.exec_error.as_raw_fd(), errno.as_mut_ptr().cast(), 4) };
        if n == 4 {
            let _ = self.wait();
            return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(errno)));
        }
        Ok(())
    }

    /// A descriptor that polls readable when it ends (`pidfd_open`; `None` before Linux 5.3).
    pub fn pidfd(&self) -> Option<OwnedFd> {
        // SAFETY: pidfd_open takes a pid and flags, returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, self.pid, 0) };
        let fd = i32::try_from(fd).ok().filter(|fd| *fd >= 0)?;
        // SAFETY: a new descriptor this process owns.
        Some(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Whether it has ended, without waiting.
    pub fn try_wait(&self) -> io::Result<Option<Ended>> {
        wait(self.pid, libc::WNOHANG)
    }

    /// Waits for it to end.
    pub fn wait(&self) -> io::Result<Ended> {
        loop {
            match wait(self.pid, 0) {
                Ok(Some(e)) => return Ok(e),
                Ok(None) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends `signal` to it.
    pub fn kill(&self, signal: i32) {
        // SAFETY: kill has no memory preconditions.
        unsafe { libc::kill(self.pid, signal) };
    }
}

fn wait(pid: i32, flags: i32) -> io::Result<Option<Ended>> {
    let mut status = 0;
    // SAFETY: waitpid writes the status word.
    let r = unsafe { libc::waitpid(pid, &mut status, flags) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if r == 0 {
        return Ok(None);
    }
    if libc::WIFEXITED(status) {
        Ok(Some(Ended::Exited(libc::WEXITSTATUS(status))))
    } else if libc::WIFSIGNALED(status) {
        Ok(Some(Ended::Signaled(libc::WTERMSIG(status))))
    } else {
        Ok(None)
    }
}

/// Whether process `pid` exists.
pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks.
    unsafe { libc::kill(pid, 0) == 0 }
}
