//! Where the daemon listens: for a unix socket, that its directory exists and lets the daemon
//! create the socket there, that no other user can replace it, that no daemon answers on it
//! already, and that `socket_mode` keeps other users out.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::Path;

use cuzk_daemon::config::{Config, Listen};
use rustix::fs::{access, Access};

use super::Check;

pub fn listen(config: &Config) -> Check {
    match &config.listen {
        // A TCP address's guard (token, TLS, loopback) is the config loader's: its warnings.
        Listen::Tcp(addr) => Check::ok("socket", format!("tcp {addr}")),
        Listen::Unix(path) => unix(path, config.socket_mode),
    }
}

fn unix(path: &Path, socket_mode: u32) -> Check {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let shown = dir.display();
    let meta = match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => meta,
        Ok(_) => {
            return Check::fail(
                "socket",
                format!("{shown}, where daemon.listen puts the socket, is not a directory"),
                "point daemon.listen into a directory",
            )
        }
        Err(e) => {
            return Check::fail(
                "socket",
                format!("{shown}, where daemon.listen puts the socket: {e}"),
                format!(
                    "create it for the daemon's user (`install -d -m 0750 -o USER -g GROUP \
                     {shown}`; under systemd, RuntimeDirectory= makes it at each start)"
                ),
            )
        }
    };
    if access(dir, Access::WRITE_OK | Access::EXEC_OK).is_err() {
        return Check::fail(
            "socket",
            format!(
                "{shown} (owner uid {}, mode {:04o}): this user cannot create the socket there",
                meta.uid(),
                meta.permissions().mode() & 0o7777
            ),
            format!("run cuzk as {shown}'s owner, or give the directory to the daemon's user"),
        );
    }
    let mode = meta.permissions().mode();
    let listen = format!("unix://{}", path.display());
    // World-writable without the sticky bit: anyone may delete the socket and put their own.
    if mode & 0o002 != 0 && mode & 0o1000 == 0 {
        return Check::warn(
            "socket",
            format!(
                "{listen}: any user may replace the socket in {shown} (mode {:04o})",
                mode & 0o7777
            ),
        )
        .with_fix(format!(
            "chmod o-w {shown}, or listen in a directory of the daemon's own"
        ));
    }
    if path.exists() && UnixStream::connect(path).is_ok() {
        return Check::warn(
            "socket",
            format!("{listen}: a daemon already answers there; `cuzk serve` will not start"),
        )
        .with_fix("stop the running daemon first, or listen elsewhere (daemon.listen)");
    }
    if socket_mode & 0o007 != 0 {
        return Check::warn(
            "socket",
            format!("{listen}: socket_mode {socket_mode:04o} lets every user of this host submit proofs"),
        )
        .with_fix("daemon.socket_mode = \"0660\" (owner and group)");
    }
    Check::ok(
        "socket",
        format!("{listen}: {shown} is writable; socket mode {socket_mode:04o}"),
    )
}
