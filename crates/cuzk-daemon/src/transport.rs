//! Listeners and access: the unix socket (mode set, a stale file replaced only when nothing
//! answers on it), TCP, the bearer-token check and TLS.

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use subtle::ConstantTimeEq;
use tokio::net::{TcpListener, UnixListener};
use tonic::service::Interceptor;
use tonic::{Request, Status};

use crate::config::TlsFiles;

/// Why a listener could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("{path}: another process answers on this socket (is a daemon already running?)")]
    SocketInUse { path: PathBuf },
    #[error("{path}: exists and is not a socket; not removing it")]
    NotASocket { path: PathBuf },
    #[error("{what} {target}: {source}")]
    Io {
        what: &'static str,
        target: String,
        #[source]
        source: std::io::Error,
    },
}

fn io(
    what: &'static str,
    target: impl std::fmt::Display,
) -> impl FnOnce(std::io::Error) -> TransportError {
    let target = target.to_string();
    move |source| TransportError::Io {
        what,
        target,
        source,
    }
}

/// Binds the unix socket at `path` with file mode `mode`. A socket file left by a daemon that
/// died is replaced; one a live process answers on is not.
pub fn bind_unix(path: &Path, mode: u32) -> Result<UnixListener, TransportError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => {
                    return Err(TransportError::SocketInUse {
                        path: path.to_owned(),
                    })
                }
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    tracing::info!(path = %path.display(), "replacing a stale socket");
                    std::fs::remove_file(path)
                        .map_err(io("removing the stale socket", path.display()))?;
                }
                Err(e) => return Err(io("probing the socket", path.display())(e)),
            }
        }
        Ok(_) => {
            return Err(TransportError::NotASocket {
                path: path.to_owned(),
            })
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io("inspecting", path.display())(e)),
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(io("creating the socket's directory", parent.display()))?;
    }
    let listener = UnixListener::bind(path).map_err(io("binding", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(io("setting the mode of", path.display()))?;
    Ok(listener)
}

/// Binds a TCP address (`host:port`).
pub async fn bind_tcp(addr: &str) -> Result<TcpListener, TransportError> {
    TcpListener::bind(addr).await.map_err(io("binding", addr))
}

/// Checks `authorization: Bearer <token>` on every call when a token is set.
#[derive(Clone)]
pub struct TokenCheck {
    token: Option<Vec<u8>>,
}

impl std::fmt::Debug for TokenCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCheck")
            .field("required", &self.token.is_some())
            .finish()
    }
}

impl TokenCheck {
    pub fn new(token: Option<&str>) -> Self {
        TokenCheck {
            token: token.map(|t| t.as_bytes().to_vec()),
        }
    }
}

impl Interceptor for TokenCheck {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(token) = &self.token else {
            return Ok(request);
        };
        let presented = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        // Compares every byte whatever the first difference (the length alone may show).
        if bool::from(presented.as_bytes().ct_eq(token)) {
            Ok(request)
        } else {
            Err(Status::unauthenticated(
                "a bearer token is required on TCP (authorization: Bearer <token>)",
            ))
        }
    }
}

/// The server's TLS identity from PEM files.
pub fn tls_config(files: &TlsFiles) -> Result<tonic::transport::ServerTlsConfig, TransportError> {
    let cert = std::fs::read(&files.cert).map_err(io("reading", files.cert.display()))?;
    let key = std::fs::read(&files.key).map_err(io("reading", files.key.display()))?;
    Ok(tonic::transport::ServerTlsConfig::new()
        .identity(tonic::transport::Identity::from_pem(cert, key)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn a_stale_socket_is_replaced_a_live_one_and_a_file_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/cuzk.sock");
        let live = bind_unix(&path, 0o660).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660);
        assert!(matches!(
            bind_unix(&path, 0o660),
            Err(TransportError::SocketInUse { .. })
        ));
        drop(live);
        // The file stays behind, with nothing listening: stale.
        assert!(path.exists());
        let _again = bind_unix(&path, 0o600).unwrap();

        let file = dir.path().join("not-a-socket");
        std::fs::write(&file, b"keep me").unwrap();
        assert!(matches!(
            bind_unix(&file, 0o660),
            Err(TransportError::NotASocket { .. })
        ));
        assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    }

    #[test]
    fn the_token_check_wants_the_exact_bearer_token() {
        let mut check = TokenCheck::new(Some("0123456789abcdef"));
        let with = |value: Option<&str>| {
            let mut request = Request::new(());
            if let Some(v) = value {
                request
                    .metadata_mut()
                    .insert("authorization", v.parse().unwrap());
            }
            request
        };
        assert!(check.call(with(Some("Bearer 0123456789abcdef"))).is_ok());
        for wrong in [
            None,
            Some("Bearer 0123456789abcdeF"),
            Some("0123456789abcdef"),
            Some("Bearer "),
        ] {
            let status = check.call(with(wrong)).unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated);
        }
        assert!(TokenCheck::new(None).call(with(None)).is_ok());
    }
}
