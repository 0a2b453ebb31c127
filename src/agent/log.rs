//! The agent's log: one line on stderr per notable event — a counter starting to move in
//! the window or going quiet, a netcheck finding appearing or clearing, a dump written or
//! failed, the capture's start and end. Plain text by default, one JSON object per line
//! with `--log-format json` (for log collectors).

use std::io::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// How log lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// `2026-12-01T16:00:00.123Z rocetap agent: event key=value ...`.
    Text,
    /// `{"ts":"…","event":"…",…}`.
    Json,
}

/// Writes log lines.
#[derive(Clone, Copy, Debug)]
pub struct Log {
    /// The format.
    pub format: LogFormat,
}

/// `t` as RFC 3339 UTC with milliseconds.
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

impl Log {
    /// One line: `event` and its fields, in order.
    pub fn event(&self, event: &str, fields: &[(&str, String)]) {
        let line = self.line(SystemTime::now(), event, fields);
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    /// The line [`Log::event`] writes at time `t`.
    pub fn line(&self, t: SystemTime, event: &str, fields: &[(&str, String)]) -> String {
        match self.format {
            LogFormat::Json => {
                let mut m = serde_json::Map::new();
                m.insert("ts".into(), rfc3339(t).into());
                m.insert("event".into(), event.into());
                for (k, v) in fields {
                    m.insert((*k).into(), v.clone().into());
                }
                serde_json::Value::Object(m).to_string()
            }
            LogFormat::Text => {
                let mut s = format!("{} rocetap agent: {event}", rfc3339(t));
                for (k, v) in fields {
                    if v.contains(' ') || v.contains('"') || v.is_empty() {
                        s.push_str(&format!(" {k}={v:?}"));
                    } else {
                        s.push_str(&format!(" {k}={v}"));
                    }
                }
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_and_both_formats() {
        let t = UNIX_EPOCH + Duration::from_millis(1_796_083_200_123); // 2026-12-01
        assert_eq!(rfc3339(t), "2026-12-01T00:00:00.123Z");
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
        let f = [("source", "eth1".to_string()), ("what", "a b".to_string())];
        let text = Log {
            format: LogFormat::Text,
        }
        .line(t, "started", &f);
        assert_eq!(
            text,
            "2026-12-01T00:00:00.123Z rocetap agent: started source=eth1 what=\"a b\""
        );
        let json = Log {
            format: LogFormat::Json,
        }
        .line(t, "started", &f);
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["event"], "started");
        assert_eq!(v["what"], "a b");
        assert_eq!(v["ts"], "2026-12-01T00:00:00.123Z");
    }
}
