//! The agent's config file (`--config FILE`): a YAML mapping whose keys are the long
//! options with `_` for `-` (`dump_on`, `netcheck_interval`, ...), each a scalar or, for
//! the repeatable ones, a list. The command line wins over the file. Nothing is guessed:
//! an unknown key, a list where one value goes, a nested mapping or a file that is not
//! YAML is an error naming the file (and the line, where the parser gives one); the
//! values are then checked by the same parsers as the options. The file is read by the
//! one YAML reader, `crate::yaml`, with its limits (an alias bomb is refused after a
//! bounded number of values, a deep nesting at a bounded depth).

use super::Error;
use crate::config::limits::AGENT_CONFIG_MAX_BYTES;
use crate::yaml::{self, Node, Value};
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The keys the file may hold, and whether each takes a list.
pub const KEYS: [(&str, bool); 31] = [
    ("interface", true),
    ("listen", false),
    ("node_name", false),
    ("snaplen", false),
    ("lanes", false),
    ("filter", false),
    ("roce_port", false),
    ("netcheck_interval", false),
    ("netcheck_netns", true),
    ("qos_from", false),
    ("qp_table", true),
    ("dump_dir", false),
    ("dump_on", true),
    ("dump_seconds", false),
    ("dump_interval", false),
    ("dump_keep", false),
    ("recorder_bytes", false),
    ("recorder_seconds", false),
    ("redact", false),
    ("memory_limit", false),
    ("window", false),
    ("log_format", false),
    ("top_flows", false),
    ("idle_timeout", false),
    ("gap_timeout", false),
    ("link_speed", false),
    ("web_config_file", false),
    ("max_connections", false),
    ("report", false),
    ("max_peers", false),
    ("topology", false),
];

/// The file's settings: each key with its values (one for a scalar), in file order.
pub fn load(path: &Path) -> Result<Vec<(String, Vec<String>)>, Error> {
    let name = path.display();
    let err = |why: String| Error::Config {
        file: name.to_string(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if !meta.is_file() {
        return Err(err("not a regular file".into()));
    }
    if meta.len() > AGENT_CONFIG_MAX_BYTES {
        return Err(err(format!(
            "{} bytes; a config file is at most {} MiB",
            meta.len(),
            AGENT_CONFIG_MAX_BYTES >> 20
        )));
    }
    // read no more than the limit even if the file grows meanwhile
    let mut buf = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(AGENT_CONFIG_MAX_BYTES + 1).read_to_end(&mut buf))
        .map_err(|e| err(e.to_string()))?;
    if buf.len() as u64 > AGENT_CONFIG_MAX_BYTES {
        return Err(err(format!(
            "more than {} MiB; a config file is at most that",
            AGENT_CONFIG_MAX_BYTES >> 20
        )));
    }
    let text = String::from_utf8(buf).map_err(|e| {
        err(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    parse(&text, &name.to_string())
}

/// [`load`] of text read already; `name` (the file's) heads every error.
pub fn parse(text: &str, name: &str) -> Result<Vec<(String, Vec<String>)>, Error> {
    let err = |why: String| Error::Config {
        file: name.to_string(),
        why,
    };
    if let Some((n, _)) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.chars().any(|c| c.is_control() && c != '\t' && c != '\r'))
    {
        return Err(err(format!(
            "line {}: a control character (not a text file?)",
            n + 1
        )));
    }
    let docs = yaml::load(text).map_err(|e| err(format!("not YAML: {e}")))?;
    let Some(doc) = docs.first() else {
        return Ok(Vec::new());
    };
    if docs.len() > 1 {
        return Err(err("more than one YAML document".into()));
    }
    let Some(map) = doc.map() else {
        return Err(err(format!(
            "line {}: expected a mapping of option names to values",
            doc.pos.line
        )));
    };
    let mut out = Vec::new();
    for (key, kp, v) in map {
        let at = |m: String| err(format!("line {}: {m}", kp.line));
        let Some(&(_, list)) = KEYS.iter().find(|(n, _)| *n == key) else {
            let known: Vec<&str> = KEYS.iter().map(|k| k.0).collect();
            return Err(at(format!(
                "unknown key '{}' (known: {})",
                crate::report::safe::term(key),
                known.join(", ")
            )));
        };
        let vals = match (v.seq(), list) {
            (Some(items), true) => items
                .iter()
                .map(|i| {
                    scalar(i)
                        .ok_or_else(|| at(format!("'{key}': every item must be a single value")))
                })
                .collect::<Result<Vec<_>, _>>()?,
            (Some(_), false) => return Err(at(format!("'{key}' takes one value, not a list"))),
            (None, _) => {
                vec![scalar(v).ok_or_else(|| at(format!("'{key}' must be a single value")))?]
            }
        };
        out.push((key.clone(), vals));
    }
    Ok(out)
}

fn scalar(n: &Node) -> Option<String> {
    match n.value {
        Value::Null | Value::Seq(_) | Value::Map(_) => None,
        _ => n.text(),
    }
}
/// A value of an option that does not parse (the text as given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueError {
    /// Not a duration.
    Duration(String),
    /// A duration beyond a billion seconds, or negative.
    DurationRange(String),
    /// Not a size.
    Size(String),
}

impl std::fmt::Display for ValueError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueError::Duration(s) => write!(
                f,
                "bad duration '{s}': use a number with ms, s, m or h (e.g. 30s)"
            ),
            ValueError::DurationRange(s) => write!(f, "bad duration '{s}': out of range"),
            ValueError::Size(s) => write!(
                f,
                "bad size '{s}': use bytes or a number with K, M or G (e.g. 32M)"
            ),
        }
    }
}

impl std::error::Error for ValueError {}

/// A duration as the options take it: `250ms`, `30s`, `5m`, `1h`, or a number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, ValueError> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, "s"),
    };
    let scale = match unit {
        "ms" => 1e-3,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(ValueError::Duration(s.to_string())),
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| ValueError::Duration(s.to_string()))?;
    let secs = v * scale;
    if !(0.0..=1e9).contains(&secs) {
        return Err(ValueError::DurationRange(s.to_string()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A size as the options take it: bytes, or with `K`, `M`, `G` (binary, KiB/MiB/GiB).
pub fn parse_bytes(s: &str) -> Result<u64, ValueError> {
    let t = s.trim().trim_end_matches("iB").trim_end_matches('B');
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| ValueError::Size(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(text: &str) -> Result<Vec<(String, Vec<String>)>, String> {
        // A file of its own per call: tests run in parallel threads of one process.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p =
            std::env::temp_dir().join(format!("rocetap-agent-cfg-{}-{n}.yaml", std::process::id()));
        std::fs::write(&p, text).unwrap();
        let r = load(&p).map_err(|e| e.to_string());
        let _ = std::fs::remove_file(&p);
        r
    }

    #[test]
    fn reads_scalars_and_lists_in_order() {
        let got = with("interface: [eth1, eth2]\nlisten: 127.0.0.1:9470\ndump_on:\n  - nak_psn_seq > 10\ntop_flows: 5\n").unwrap();
        assert_eq!(
            got[0],
            ("interface".into(), vec!["eth1".into(), "eth2".into()])
        );
        assert_eq!(got[1].1, vec!["127.0.0.1:9470".to_string()]);
        assert_eq!(got[2].1, vec!["nak_psn_seq > 10".to_string()]);
        assert_eq!(got[3].1, vec!["5".to_string()]);
        assert!(with("").unwrap().is_empty());
        assert_eq!(
            with("interface: eth1\n").unwrap()[0].1,
            vec!["eth1".to_string()]
        );
    }

    #[test]
    fn hostile_files_are_errors_that_say_why() {
        for (text, want) in [
            ("bogus: 1\n", "unknown key 'bogus'"),
            ("listen: [a, b]\n", "takes one value"),
            ("dump_on: [{a: 1}]\n", "every item"),
            ("listen: {a: 1}\n", "single value"),
            ("- a\n- b\n", "expected a mapping"),
            ("listen: [unclosed\n", "not YAML"),
            ("a: 1\n---\nb: 2\n", "more than one"),
            ("listen: a\nlisten: b\n", "duplicate key \"listen\""),
            ("listen: a\n\u{0}\u{1}: [\n", "line 2: a control character"),
        ] {
            let e = with(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let e = load(Path::new("/nonexistent/rocetap.yaml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/rocetap.yaml"), "{e}");
    }

    /// A billion laughs in 342 bytes: nine levels of nine aliases each.
    fn alias_bomb() -> String {
        let mut s = String::from("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
        let mut prev = 'a';
        for n in 'b'..='i' {
            let refs = vec![format!("*{prev}"); 9].join(",");
            s.push_str(&format!("{n}: &{n} [{refs}]\n"));
            prev = n;
        }
        s
    }

    #[test]
    fn alias_bombs_and_deep_nesting_are_refused_quickly() {
        // Was: yaml-rust2 expanded every alias, past 8 GiB before it failed.
        let start = std::time::Instant::now();
        let e = with(&alias_bomb()).unwrap_err();
        assert!(e.contains("after expanding aliases"), "{e}");
        assert!(e.starts_with("agent: config ") && !e.contains('\n'), "{e}");
        let e = with(&format!(
            "listen: {}{}\n",
            "[".repeat(5000),
            "]".repeat(5000)
        ))
        .unwrap_err();
        assert!(e.contains("deeper than 64"), "{e}");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        // flow style and JSON are YAML too
        let got = with("{\"listen\": \"127.0.0.1:9470\", interface: [eth1]}").unwrap();
        assert_eq!(got.len(), 2);
        let e = with("\"\\u001b]0;x\\u0007\": 1\n").unwrap_err();
        assert!(e.contains("unknown key '\\x1b]0;x\\x07'"), "{e}");
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5h").unwrap(), Duration::from_secs(5400));
        for bad in ["", "s", "5x", "-1s", "1e300s", "nan"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_bytes("32M").unwrap(), 32 << 20);
        assert_eq!(parse_bytes("4KiB").unwrap(), 4096);
        assert_eq!(parse_bytes("100").unwrap(), 100);
        for bad in ["", "M", "1T", "-1", "99999999999999G"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }
}
