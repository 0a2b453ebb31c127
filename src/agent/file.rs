//! The agent's config file (`--config FILE`): a YAML mapping whose keys are the long
//! options with `_` for `-` (`dump_on`, `netcheck_interval`, ...), each a scalar or, for
//! the repeatable ones, a list. The command line wins over the file. Nothing is guessed:
//! an unknown key, a list where one value goes, a nested mapping or a file that is not
//! YAML is an error naming the file (and the line, where the parser gives one); the
//! values are then checked by the same parsers as the options.

use crate::error::Failure;
use std::path::Path;
use std::time::Duration;
use yaml_rust2::{Yaml, YamlLoader};

/// The keys the file may hold, and whether each takes a list.
pub const KEYS: [(&str, bool); 22] = [
    ("interface", true),
    ("listen", false),
    ("node_name", false),
    ("snaplen", false),
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
    ("window", false),
    ("log_format", false),
    ("top_flows", false),
    ("idle_timeout", false),
    ("link_speed", false),
];

/// The largest config file read.
const MAX_BYTES: u64 = 1 << 20;

/// The file's settings: each key with its values (one for a scalar), in file order.
pub fn load(path: &Path) -> Result<Vec<(String, Vec<String>)>, Failure> {
    let name = path.display();
    let err = |m: String| Failure::new(format!("agent: config {name}: {m}"));
    let meta = std::fs::metadata(path).map_err(|e| err(e.to_string()))?;
    if meta.len() > MAX_BYTES {
        return Err(err(format!(
            "{} bytes; a config file is at most 1 MiB",
            meta.len()
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    parse(&text, &name.to_string())
}

/// [`load`] of text read already; `name` (the file's) heads every error.
pub fn parse(text: &str, name: &str) -> Result<Vec<(String, Vec<String>)>, Failure> {
    let err = |m: String| Failure::new(format!("agent: config {name}: {m}"));
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
    let docs = YamlLoader::load_from_str(text).map_err(|e| {
        err(format!(
            "not YAML: {} at line {} column {}",
            e.info(),
            e.marker().line(),
            e.marker().col() + 1
        ))
    })?;
    let Some(doc) = docs.first() else {
        return Ok(Vec::new());
    };
    if docs.len() > 1 {
        return Err(err("more than one YAML document".into()));
    }
    let Yaml::Hash(map) = doc else {
        if doc.is_null() {
            return Ok(Vec::new());
        }
        return Err(err("expected a mapping of option names to values".into()));
    };
    let mut out = Vec::new();
    for (k, v) in map {
        let Some(key) = k.as_str() else {
            return Err(err(format!("key {k:?} is not a name")));
        };
        let Some(&(_, list)) = KEYS.iter().find(|(n, _)| *n == key) else {
            let known: Vec<&str> = KEYS.iter().map(|k| k.0).collect();
            return Err(err(format!(
                "unknown key '{key}' (known: {})",
                known.join(", ")
            )));
        };
        let vals = match (v, list) {
            (Yaml::Array(items), true) => items
                .iter()
                .map(|i| {
                    scalar(i)
                        .ok_or_else(|| err(format!("'{key}': every item must be a single value")))
                })
                .collect::<Result<Vec<_>, _>>()?,
            (Yaml::Array(_), false) => {
                return Err(err(format!("'{key}' takes one value, not a list")))
            }
            (other, _) => {
                vec![scalar(other).ok_or_else(|| err(format!("'{key}' must be a single value")))?]
            }
        };
        if out.iter().any(|(k, _): &(String, Vec<String>)| k == key) {
            return Err(err(format!("'{key}' is given twice")));
        }
        out.push((key.to_string(), vals));
    }
    Ok(out)
}

fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Real(r) => Some(r.clone()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A duration as the options take it: `250ms`, `30s`, `5m`, `1h`, or a number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
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
        _ => {
            return Err(format!(
                "bad duration '{s}': use a number with ms, s, m or h (e.g. 30s)"
            ))
        }
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration '{s}': use a number with ms, s, m or h (e.g. 30s)"))?;
    let secs = v * scale;
    if !(0.0..=1e9).contains(&secs) {
        return Err(format!("bad duration '{s}': out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A size as the options take it: bytes, or with `K`, `M`, `G` (binary, KiB/MiB/GiB).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
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
        .ok_or_else(|| format!("bad size '{s}': use bytes or a number with K, M or G (e.g. 32M)"))
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
        let r = load(&p).map_err(|e| e.what);
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
            ("listen: a\nlisten: b\n", "duplicated key"),
            ("listen: a\n\u{0}\u{1}: [\n", "line 2: a control character"),
        ] {
            let e = with(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let e = load(Path::new("/nonexistent/rocetap.yaml"))
            .unwrap_err()
            .what;
        assert!(e.contains("/nonexistent/rocetap.yaml"), "{e}");
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
