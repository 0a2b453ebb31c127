//! `--agent`: a node agent's `/report` (`rocetap.analyze/1` JSON) over plain HTTP/1.1
//! (`http://[USER:PASS@]HOST:PORT[/PATH]`, path `/report` by default), or a saved one
//! (a file: `curl -s https://node:9470/report > r.json` for an agent behind TLS).
//! Bounded in size and time.

use crate::config::limits::NCCL_AGENT_REPORT_BYTES;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(15);

/// The report at `src`: a URL or a file.
pub fn report(src: &str) -> Result<Value, String> {
    let body = if let Some(rest) = src.strip_prefix("http://") {
        get(rest).map_err(|e| format!("nccl: --agent {src}: {e}"))?
    } else if src.starts_with("https://") {
        return Err(format!(
            "nccl: --agent {src}: https is not read here; save the report (curl -s {src} > report.json) and give the file"
        ));
    } else {
        let f = std::fs::File::open(src).map_err(|e| format!("nccl: --agent {src}: {e}"))?;
        let mut b = Vec::new();
        f.take(NCCL_AGENT_REPORT_BYTES as u64 + 1)
            .read_to_end(&mut b)
            .map_err(|e| format!("nccl: --agent {src}: {e}"))?;
        b
    };
    if body.len() > NCCL_AGENT_REPORT_BYTES {
        return Err(format!(
            "nccl: --agent {src}: larger than {NCCL_AGENT_REPORT_BYTES} bytes"
        ));
    }
    serde_json::from_slice(&body).map_err(|e| format!("nccl: --agent {src}: not JSON: {e}"))
}

fn base64(b: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut o = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                o.push(T[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                o.push('=');
            }
        }
    }
    o
}

/// GET of `host[:port][/path]` (after `http://`); the body.
fn get(rest: &str) -> Result<Vec<u8>, String> {
    let (auth_host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/report"),
    };
    let (auth, host) = match auth_host.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, auth_host),
    };
    if host.is_empty() || path.contains(['\r', '\n', ' ']) || host.contains(['\r', '\n', ' ']) {
        return Err("not an http://HOST:PORT/PATH URL".into());
    }
    let target = if host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host.to_string()
    } else {
        format!("{host}:80")
    };
    let addr = target
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    if let Some(a) = auth {
        req += &format!("Authorization: Basic {}\r\n", base64(a.as_bytes()));
    }
    req += "\r\n";
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.take(NCCL_AGENT_REPORT_BYTES as u64 + 65_536)
        .read_to_end(&mut raw)
        .map_err(|e| e.to_string())?;
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no HTTP response")?;
    let head = String::from_utf8_lossy(&raw[..end]).to_string();
    let body = &raw[end + 4..];
    let status = head.split_ascii_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!("HTTP {}", head.lines().next().unwrap_or("")));
    }
    let chunked = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("transfer-encoding:") && l.contains("chunked")
    });
    if chunked {
        dechunk(body)
    } else {
        Ok(body.to_vec())
    }
}

/// A chunked body, decoded.
fn dechunk(mut b: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let i = b.windows(2).position(|w| w == b"\r\n").ok_or("bad chunk")?;
        let size = std::str::from_utf8(&b[..i]).map_err(|_| "bad chunk size")?;
        let size = size.split(';').next().unwrap_or("").trim();
        let n = usize::from_str_radix(size, 16).map_err(|_| "bad chunk size")?;
        b = &b[i + 2..];
        if n == 0 {
            return Ok(out);
        }
        if b.len() < n + 2 || out.len() + n > NCCL_AGENT_REPORT_BYTES {
            return Err("truncated or oversized chunk".into());
        }
        out.extend_from_slice(&b[..n]);
        b = &b[n + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_and_chunks() {
        assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(
            dechunk(b"3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert!(dechunk(b"ff\r\nabc").is_err());
        assert!(report("https://x/report").is_err());
    }
}
