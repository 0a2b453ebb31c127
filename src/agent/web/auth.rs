//! `basic_auth_users`: user names with bcrypt hashes, checked as the exporter toolkit
//! checks them. A request without credentials, or for a user not in the file, is refused
//! without hashing anything... except that an unknown user costs one bcrypt against a fixed
//! hash, so that timing does not tell which users exist; a wrong password costs one
//! bcrypt. Successful checks are remembered (at most [`CACHE`] of them), so a scraper that
//! sends the same credentials every 15 s pays bcrypt once.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The most remembered successful (user, password) pairs; the set is emptied when full.
pub const CACHE: usize = 64;

/// Hashed when the user is unknown (a bcrypt of a random string, cost 10).
const DUMMY: &str = "$2b$10$jTX1BtOnbLPm3NkNoO5MZ.XP6ATvzqgZbrfyyChEoU0wILFFIEM6W";

/// The users and the remembered successes.
#[derive(Clone, Default)]
pub struct Users {
    users: Vec<(String, String)>,
    ok: Arc<Mutex<HashSet<(String, String)>>>,
}

/// What the credentials of a request are worth.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No users configured, or the pair succeeded before.
    Pass,
    /// No (or unreadable) credentials.
    Missing,
    /// A bcrypt must decide: the user's hash (or a dummy one), and the pair.
    Check {
        hash: String,
        known: bool,
        user: String,
        password: String,
    },
}

/// Why a user of `basic_auth_users` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserError {
    /// The hash is not bcrypt's.
    NotBcrypt,
    /// The name holds `:`, which basic authentication cannot carry.
    Colon,
}

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UserError::NotBcrypt => {
                "not a bcrypt hash (make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`)"
            }
            UserError::Colon => "a user name cannot hold ':'",
        })
    }
}

impl std::error::Error for UserError {}

impl Users {
    pub fn len(&self) -> usize {
        self.users.len()
    }

    /// Adds a user; the hash must be bcrypt's (`$2a$`, `$2b$`, `$2x$` or `$2y$`).
    pub fn add(&mut self, user: &str, hash: &str) -> Result<(), UserError> {
        if hash.parse::<bcrypt::HashParts>().is_err() {
            return Err(UserError::NotBcrypt);
        }
        if user.contains(':') {
            return Err(UserError::Colon);
        }
        self.users.push((user.to_string(), hash.to_string()));
        Ok(())
    }

    /// Judges an `Authorization` header value without hashing.
    pub fn judge(&self, authorization: Option<&[u8]>) -> Verdict {
        if self.users.is_empty() {
            return Verdict::Pass;
        }
        let Some((user, password)) = authorization.and_then(decode) else {
            return Verdict::Missing;
        };
        if self
            .ok
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&(user.clone(), password.clone()))
        {
            return Verdict::Pass;
        }
        let (hash, known) = match self.users.iter().find(|(u, _)| *u == user) {
            Some((_, h)) => (h.clone(), true),
            None => (DUMMY.to_string(), false),
        };
        Verdict::Check {
            hash,
            known,
            user,
            password,
        }
    }

    /// The bcrypt of a [`Verdict::Check`] (slow: run it off the server's thread);
    /// remembers a success.
    pub fn verify(&self, hash: &str, known: bool, user: String, password: String) -> bool {
        let ok = bcrypt::verify(password.as_bytes(), hash).unwrap_or(false) && known;
        if ok {
            let mut set = self
                .ok
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if set.len() >= CACHE {
                set.clear();
            }
            set.insert((user, password));
        }
        ok
    }
}

/// `Basic base64(user:password)` into its parts.
fn decode(v: &[u8]) -> Option<(String, String)> {
    let v = std::str::from_utf8(v).ok()?.trim();
    let (scheme, b64) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") || b64.len() > 4096 {
        return None;
    }
    let raw = base64(b64.trim())?;
    let text = String::from_utf8(raw).ok()?;
    let (u, p) = text.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

/// Standard base64 with padding (RFC 4648), or `None`.
fn base64(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        }))
    };
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for chunk in b.chunks(4) {
        let pad = chunk.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || chunk[..4 - pad].contains(&b'=') {
            return None;
        }
        let mut n = 0u32;
        for &c in &chunk[..4 - pad] {
            n = n << 6 | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_decoded_and_checked_once() {
        assert_eq!(base64("YWxpY2U6cHc=").unwrap(), b"alice:pw");
        assert_eq!(base64("YQ==").unwrap(), b"a");
        assert!(base64("YQ=").is_none() && base64("Y===").is_none() && base64("*AAA").is_none());
        let mut u = Users::default();
        assert_eq!(u.judge(None), Verdict::Pass);
        u.add("alice", &bcrypt::hash("pw", 4).unwrap()).unwrap();
        assert!(u.add("bob", "plain").is_err());
        assert_eq!(u.judge(None), Verdict::Missing);
        assert_eq!(u.judge(Some(b"Bearer x")), Verdict::Missing);
        let Verdict::Check {
            hash,
            known,
            user,
            password,
        } = u.judge(Some(b"Basic YWxpY2U6d3Jvbmc="))
        else {
            panic!()
        };
        assert!(!u.verify(&hash, known, user, password));
        let Verdict::Check {
            hash,
            known,
            user,
            password,
        } = u.judge(Some(b"Basic bWFsbG9yeTpwdw=="))
        else {
            panic!()
        };
        assert!(!known && !u.verify(&hash, known, user, password));
        let Verdict::Check {
            hash,
            known,
            user,
            password,
        } = u.judge(Some(b"basic YWxpY2U6cHc="))
        else {
            panic!()
        };
        assert!(u.verify(&hash, known, user, password));
        // remembered: no bcrypt the second time
        assert_eq!(u.judge(Some(b"Basic YWxpY2U6cHc=")), Verdict::Pass);
        assert!(bcrypt::verify("x", DUMMY).is_ok());
    }
}
