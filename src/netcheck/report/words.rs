//! The words of every netcheck finding, in one place: each typed value of
//! [`crate::netcheck::found`] becomes a [`Finding`] (title, detail, evidence, fix,
//! snippet), one file per concern — `routing` (reply paths, node source, ARP sysctls and
//! what each interface sysctl does), `roce` (readiness from sysfs), `qos` (the host's QoS,
//! alone, across nodes and joined with a capture), `capture` (a capture's ARP symptoms,
//! with `crate::report::findings`' words shared with `analyze`) — and `nad`, the NAD lint's
//! typed lints.

use super::Finding;
use crate::netcheck::checks::Evidence;
use crate::netcheck::found::Found;

mod capture;
pub(crate) mod nad;
mod qos;
mod roce;
mod routing;

pub use qos::summary as qos_summary;
pub use routing::{interfaces, rp_effect, SBR_SNIPPET};

/// What a concern's words give a finding: everything but its id and severity.
struct Words {
    title: String,
    detail: String,
    evidence: Vec<Evidence>,
    fix: Vec<String>,
    snippet: Option<String>,
}

impl Words {
    /// Words without a snippet.
    fn new(title: String, detail: String, evidence: Vec<Evidence>, fix: Vec<String>) -> Self {
        Words {
            title,
            detail,
            evidence,
            fix,
            snippet: None,
        }
    }
}

/// `query  ->  answer` evidence.
fn ev(query: impl Into<String>, answer: impl Into<String>) -> Evidence {
    Evidence {
        query: query.into(),
        answer: answer.into(),
    }
}

/// One finding in words.
pub fn finding(f: &Found<'_>) -> Finding {
    let w = match f {
        Found::Routing(x) => routing::words(x),
        Found::Roce(x) => roce::words(x),
        Found::Qos(x) => qos::words(x),
        Found::Capture(x) => capture::words(x),
    };
    Finding {
        id: f.id(),
        severity: f.severity(),
        title: w.title,
        detail: w.detail,
        evidence: w.evidence,
        fix: w.fix,
        snippet: w.snippet,
    }
}

/// Every finding in words, in their order.
pub fn findings(found: &[Found<'_>]) -> Vec<Finding> {
    found.iter().map(finding).collect()
}
