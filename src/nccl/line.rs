//! One log line's prefixes, outermost first: `kubectl logs --prefix` (`[pod/NAME/CTR] `),
//! `kubectl logs --timestamps` (RFC 3339, UTC), NCCL's own timestamp (`[%F %T] `,
//! `NCCL_DEBUG_TIMESTAMP_FORMAT`'s default, on WARN lines since NCCL 2.26), then NCCL's
//! `host:pid:tid [cuda_dev] NCCL INFO ` or `host:pid:tid [cuda_dev] file:line [(func)] NCCL
//! WARN ` (`src/debug.cc`, 2.12 to 2.30).

/// A line's level as NCCL wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// `NCCL INFO`.
    Info,
    /// `NCCL WARN`.
    Warn,
}

/// What the prefixes of one NCCL line say, and the message after them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prefixed<'a> {
    /// `kubectl logs --prefix`'s source (`pod/NAME/CONTAINER`).
    pub pod: Option<&'a str>,
    /// The timestamp as written (kubectl's, else NCCL's).
    pub time: Option<&'a str>,
    /// That timestamp in ns since the Unix epoch when it states UTC (kubectl's);
    /// NCCL's own is local time and stays text.
    pub time_ns: Option<u64>,
    /// The host name NCCL printed.
    pub host: &'a str,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// The CUDA device of the thread.
    pub cuda_dev: u32,
    /// INFO or WARN.
    pub level: Level,
    /// `file:line` of a WARN.
    pub source: Option<&'a str>,
    /// The message.
    pub body: &'a str,
}

/// The line's prefixes and message; `None` when it is not an NCCL INFO or WARN line.
pub fn split(line: &str) -> Option<Prefixed<'_>> {
    let mut rest = line.trim_end_matches(['\r', '\n']);
    let mut pod = None;
    if let Some(r) = rest.strip_prefix('[') {
        if let Some((p, r)) = r.split_once("] ") {
            if p.starts_with("pod/") || p.contains('/') {
                pod = Some(p);
                rest = r;
            }
        }
    }
    let mut time = None;
    let mut time_ns = None;
    if let Some((t, r)) = rest.split_once(' ') {
        if let Some(ns) = rfc3339_ns(t) {
            time = Some(t);
            time_ns = Some(ns);
            rest = r;
        }
    }
    if let Some(r) = rest.strip_prefix('[') {
        // NCCL's `[%F %T] ` (with sub-seconds when the format asks): a date first.
        if let Some((t, r)) = r.split_once("] ") {
            if t.get(..10).is_some_and(is_date) {
                if time.is_none() {
                    time = Some(t);
                }
                rest = r;
            }
        }
    }
    let (hpt, r) = rest.split_once(' ')?;
    let mut it = hpt.rsplitn(3, ':');
    let tid = it.next()?.parse().ok()?;
    let pid = it.next()?.parse().ok()?;
    // HOST_NAME_MAX is 64 and a DNS name 253 bytes: a longer "host" is not NCCL's.
    let host = it.next().filter(|h| !h.is_empty() && h.len() <= 255)?;
    let r = r.strip_prefix('[')?;
    let (dev, r) = r.split_once("] ")?;
    let cuda_dev = dev.parse().ok()?;
    let (level, source, body) = if let Some(b) = r.strip_prefix("NCCL INFO ") {
        (Level::Info, None, b)
    } else if let Some(b) = r.strip_prefix("NCCL INFO") {
        (Level::Info, None, b)
    } else {
        let (head, body) = r.split_once("NCCL WARN")?;
        let src = head.split(' ').next().filter(|s| !s.is_empty());
        (Level::Warn, src, body.strip_prefix(' ').unwrap_or(body))
    };
    Some(Prefixed {
        pod,
        time,
        time_ns,
        host,
        pid,
        tid,
        cuda_dev,
        level,
        source,
        body,
    })
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// `2024-05-01T12:00:00.123456789Z` (or `+HH:MM`) in ns since the Unix epoch.
pub fn rfc3339_ns(s: &str) -> Option<u64> {
    if s.len() < 20 || !is_date(s.get(..10)?) || s.as_bytes()[10] != b'T' {
        return None;
    }
    let num = |a: usize, b: usize| s.get(a..b)?.parse::<u64>().ok();
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, se) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if s.as_bytes()[13] != b':' || s.as_bytes()[16] != b':' {
        return None;
    }
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut frac_ns = 0u64;
    if let Some(f) = rest.strip_prefix('.') {
        let n = f.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        for (i, c) in f.bytes().take(n).enumerate() {
            if i < 9 {
                frac_ns = frac_ns * 10 + u64::from(c - b'0');
            }
        }
        for _ in n..9 {
            frac_ns *= 10;
        }
        rest = &f[n..];
    }
    let offset_s: i64 = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let oh = o.get(1..3)?.parse::<i64>().ok()?;
            let om = o.get(4..6)?.parse::<i64>().ok()?;
            let v = oh * 3600 + om * 60;
            if o.starts_with('-') {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y as i64, mo as i64, d as i64);
    let secs = days * 86_400 + (h * 3600 + mi * 60 + se) as i64 - offset_s;
    u64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(frac_ns)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_and_warn_prefixes() {
        let p = split("node1:4242:4300 [3] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:198.18.0.1<0>").unwrap();
        assert_eq!(
            (p.host, p.pid, p.tid, p.cuda_dev, p.level),
            ("node1", 4242, 4300, 3, Level::Info)
        );
        assert!(p.body.starts_with("NET/IB : Using"));
        let w = split("[pod/job-w0/main] 2024-05-01T12:00:01.5Z [2025-05-01 12:00:01] node1:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got").unwrap();
        assert_eq!(w.level, Level::Warn);
        assert_eq!(w.pod, Some("pod/job-w0/main"));
        assert_eq!(w.source, Some("transport/net_ib.cc:1295"));
        assert_eq!(w.time, Some("2024-05-01T12:00:01.5Z"));
        assert_eq!(w.time_ns, Some(1_714_564_801_500_000_000));
        assert_eq!(w.body, "NET/IB : Got");
        let f =
            split("[2025-05-01 12:00:01] h:1:2 [0] p2p.cc:688 (ncclIbLog) NCCL WARN x").unwrap();
        assert_eq!((f.time, f.body), (Some("2025-05-01 12:00:01"), "x"));
        assert!(split("plain application output").is_none());
        assert!(split("h:x:2 [0] NCCL INFO y").is_none());
        // A multi-byte character where a date would end: no panic.
        assert!(split("[2025-05-0\u{e9}] h:1:2 [0] NCCL INFO y").is_none());
        assert!(rfc3339_ns("2024-05-01T12:00:0\u{e9}Z").is_none());
    }

    #[test]
    fn rfc3339() {
        assert_eq!(rfc3339_ns("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(rfc3339_ns("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(
            rfc3339_ns("2000-03-01T00:00:00Z"),
            Some(951_868_800_000_000_000)
        );
        assert_eq!(rfc3339_ns("2000-13-01T00:00:00Z"), None);
        assert_eq!(rfc3339_ns("1969-12-31T23:59:59Z"), None);
    }
}
