//! The web configuration file (`--web-config-file FILE`) in the format of the Prometheus
//! exporter toolkit, so that the file an operator already gives node_exporter works here:
//!
//! ```yaml
//! tls_server_config:
//!   cert_file: /etc/rocetap/tls.crt      # or `cert:` with the PEM inline
//!   key_file: /etc/rocetap/tls.key       # or `key:`
//!   client_ca_file: /etc/rocetap/ca.crt  # optional
//!   client_auth_type: RequireAndVerifyClientCert
//!   min_version: TLS12                   # TLS12 or TLS13 (rustls has no older ones)
//! http_server_config:
//!   headers: { Strict-Transport-Security: max-age=31536000 }
//! basic_auth_users:
//!   prometheus: $2y$10$...               # bcrypt hashes
//! ```
//!
//! The file is read by the one bounded YAML reader (`crate::yaml`); an unknown key, a
//! value of the wrong kind, a missing or unreadable certificate or a hash that is not
//! bcrypt is a one-line error naming the file and the line.

use super::auth::Users;
use super::tls::{self, Tls};
use crate::config::limits::{WEB_CONFIG_MAX_BYTES, WEB_PEM_MAX_BYTES};
use crate::yaml::{self, Node, Pos, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod error;
pub use error::{ConfError, Why};

/// A checked web configuration: TLS settings ready to serve, the users, extra headers.
pub struct WebConfig {
    /// The file it came from.
    pub path: PathBuf,
    /// `None`: plain HTTP.
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    /// Empty: no authentication.
    pub(crate) users: Users,
    /// `http_server_config.headers`: added to every response.
    pub(crate) headers: Vec<(String, String)>,
}

impl std::fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebConfig")
            .field("path", &self.path)
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.len())
            .field("headers", &self.headers)
            .finish()
    }
}

/// The headers `http_server_config.headers` may set (the exporter toolkit's list).
const HEADERS: [&str; 5] = [
    "Strict-Transport-Security",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "X-XSS-Protection",
    "Content-Security-Policy",
];

/// Reads `path` (at most `max` bytes of text) through the project's one bounded reader,
/// [`crate::sysfile::read`]: a FIFO or device put in its place is refused without blocking.
pub fn read_bounded(path: &Path, max: u64, what: &'static str) -> Result<String, ConfError> {
    crate::sysfile::read(path, usize::try_from(max).unwrap_or(usize::MAX))
        .map_err(|error| ConfError::Read { error, what, max })
}

impl WebConfig {
    /// Reads and checks the file; the error is one line without the option's name.
    pub fn load(path: &Path) -> Result<WebConfig, ConfError> {
        let text = read_bounded(path, WEB_CONFIG_MAX_BYTES, "a web config file")?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::parse(&text, dir)
            .map(|(tls, users, headers)| WebConfig {
                path: path.to_path_buf(),
                tls,
                users,
                headers,
            })
            .map_err(|e| ConfError::In {
                path: path.to_path_buf(),
                error: Box::new(e),
            })
    }

    /// The text of a web config; relative file names are taken from `dir` (as the
    /// toolkit does, from the config file's directory).
    #[allow(clippy::type_complexity)]
    fn parse(
        text: &str,
        dir: &Path,
    ) -> Result<
        (
            Option<Arc<rustls::ServerConfig>>,
            Users,
            Vec<(String, String)>,
        ),
        ConfError,
    > {
        if let Some((n, _)) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.chars().any(|c| c.is_control() && c != '\t' && c != '\r'))
        {
            return Err(at_line(n + 1, Why::ControlChar));
        }
        let docs = yaml::load(text).map_err(ConfError::NotYaml)?;
        if docs.len() > 1 {
            return Err(ConfError::ManyDocuments);
        }
        let mut tls_cfg = None;
        let mut users = Users::default();
        let mut headers = Vec::new();
        let Some(doc) = docs.first() else {
            return Ok((None, users, headers));
        };
        for (key, kp, v) in mapping(doc, "the web config")? {
            match key.as_str() {
                "tls_server_config" => tls_cfg = Some(tls_section(v, dir)?),
                "basic_auth_users" => {
                    for (user, up, hash) in mapping(v, "basic_auth_users")? {
                        let h = string(hash, up, user)?;
                        users.add(user, h).map_err(|why| {
                            at_line(
                                up.line,
                                Why::User {
                                    user: user.clone(),
                                    why,
                                },
                            )
                        })?;
                    }
                }
                "http_server_config" => {
                    for (k, p, v) in mapping(v, "http_server_config")? {
                        match k.as_str() {
                            "http2" => {
                                // rocetap serves HTTP/1.1 only, what `http2: false` asks.
                                v.bool().ok_or_else(|| {
                                    at_line(p.line, Why::NotABool("http2".to_string()))
                                })?;
                            }
                            "headers" => {
                                for (name, hp, val) in mapping(v, "headers")? {
                                    let Some(n) =
                                        HEADERS.iter().find(|h| h.eq_ignore_ascii_case(name))
                                    else {
                                        return Err(at_line(
                                            hp.line,
                                            Why::HeaderNotAllowed {
                                                name: name.clone(),
                                                allowed: &HEADERS,
                                            },
                                        ));
                                    };
                                    let val = string(val, hp, name)?;
                                    if val.chars().any(char::is_control) {
                                        return Err(at_line(hp.line, Why::HeaderControl(n)));
                                    }
                                    headers.push((n.to_string(), val.to_string()));
                                }
                            }
                            _ => return Err(unknown(k, p, &["http2", "headers"])),
                        }
                    }
                }
                _ => {
                    return Err(unknown(
                        key,
                        kp,
                        &[
                            "tls_server_config",
                            "http_server_config",
                            "basic_auth_users",
                        ],
                    ))
                }
            }
        }
        let tls = tls_cfg
            .map(|t| tls::server_config(&t))
            .transpose()
            .map_err(ConfError::Tls)?
            .map(Arc::new);
        Ok((tls, users, headers))
    }
}

fn at_line(line: usize, why: Why) -> ConfError {
    ConfError::At { line, why }
}

fn unknown(key: &str, p: &Pos, known: &'static [&'static str]) -> ConfError {
    at_line(
        p.line,
        Why::UnknownKey {
            key: key.to_string(),
            known,
        },
    )
}

/// A mapping (a null value is an empty one, as YAML writes `key:`).
fn mapping<'a>(n: &'a Node, what: &'static str) -> Result<&'a [(String, Pos, Node)], ConfError> {
    if n.is_null() {
        return Ok(&[]);
    }
    n.map()
        .ok_or_else(|| at_line(n.pos.line, Why::NotAMapping(what)))
}

fn string<'a>(n: &'a Node, kp: &Pos, key: &str) -> Result<&'a str, ConfError> {
    match &n.value {
        Value::Str(s) if !s.is_empty() => Ok(s),
        _ => Err(at_line(kp.line, Why::NotAString(key.to_string()))),
    }
}

/// `tls_server_config`, with its files read (relative to `dir`).
fn tls_section(n: &Node, dir: &Path) -> Result<Tls, ConfError> {
    let mut t = Tls::default();
    let mut at = 0;
    let pem = |v: &Node, p: &Pos, k: &str| -> Result<String, ConfError> {
        let f = dir.join(string(v, p, k)?);
        read_bounded(&f, WEB_PEM_MAX_BYTES, "a PEM file").map_err(|e| {
            at_line(
                p.line,
                Why::Pem {
                    key: k.to_string(),
                    error: Box::new(e),
                },
            )
        })
    };
    for (k, p, v) in mapping(n, "tls_server_config")? {
        at = p.line;
        let s = |v: &Node| string(v, p, k).map(str::to_string);
        let list = |v: &Node| -> Result<Vec<String>, ConfError> {
            match v.seq() {
                Some(items) => items
                    .iter()
                    .map(|i| string(i, p, k).map(str::to_string))
                    .collect(),
                None => Err(at_line(p.line, Why::NotAList(k.clone()))),
            }
        };
        match k.as_str() {
            "cert_file" => t.cert = Some((pem(v, p, k)?, p.line)),
            "key_file" => t.key = Some((pem(v, p, k)?, p.line)),
            "cert" => t.cert = Some((s(v)?, p.line)),
            "key" => t.key = Some((s(v)?, p.line)),
            "client_ca_file" => t.client_ca = Some((pem(v, p, k)?, p.line)),
            "client_auth_type" => t.client_auth = Some((s(v)?, p.line)),
            "min_version" => t.min_version = Some((s(v)?, p.line)),
            "max_version" => t.max_version = Some((s(v)?, p.line)),
            "cipher_suites" => t.cipher_suites = Some((list(v)?, p.line)),
            "curve_preferences" => t.curves = Some((list(v)?, p.line)),
            "prefer_server_cipher_suites" => {
                t.prefer_server = v
                    .bool()
                    .ok_or_else(|| at_line(p.line, Why::NotABool(k.clone())))?;
            }
            _ => {
                return Err(unknown(
                    k,
                    p,
                    &[
                        "cert_file",
                        "key_file",
                        "cert",
                        "key",
                        "client_ca_file",
                        "client_auth_type",
                        "min_version",
                        "max_version",
                        "cipher_suites",
                        "curve_preferences",
                        "prefer_server_cipher_suites",
                    ],
                ))
            }
        }
    }
    t.line = if at == 0 { n.pos.line } else { at };
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<usize, String> {
        WebConfig::parse(text, Path::new("/nonexistent"))
            .map(|(_, u, h)| u.len() + h.len())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn users_headers_and_errors() {
        let h = bcrypt::hash("pw", 4).unwrap();
        assert_eq!(
            parse(&format!("basic_auth_users:\n  alice: '{h}'\n")),
            Ok(1)
        );
        assert_eq!(parse(""), Ok(0));
        assert_eq!(
            parse("http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n"),
            Ok(1)
        );
        for (text, want) in [
            ("bogus: 1\n", "line 1: unknown key 'bogus'"),
            (
                "basic_auth_users:\n  alice: plain\n",
                "line 2: user 'alice': not a bcrypt hash",
            ),
            ("basic_auth_users: [a]\n", "must be a mapping"),
            (
                "tls_server_config:\n  cert_file: x.crt\n",
                "/nonexistent/x.crt",
            ),
            (
                "tls_server_config:\n  nope: 1\n",
                "line 2: unknown key 'nope'",
            ),
            (
                "http_server_config:\n  headers:\n    Set-Cookie: a\n",
                "cannot be set",
            ),
            ("a: 1\n---\nb: 2\n", "more than one"),
            ("[unclosed\n", "not YAML"),
            ("- a\n", "must be a mapping"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
