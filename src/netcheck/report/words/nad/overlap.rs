//! The words of `nad-range-overlap`: one finding per group of NADs whose ranges overlap,
//! naming a bounded few in the title and evidence (the JSON `nads` lists them all).

use super::{ev, few_of, obj, w, Words};
use crate::netcheck::nad::rules::{Overlap, OverlapMember};

/// How many NADs of an overlap group its evidence lists one per line; the JSON `nads`
/// list holds them all.
const OVERLAP_EVIDENCE: usize = 8;

/// The words of an overlap group: one pool, separate pools or several rails.
pub(super) fn overlap_words(nads: &[OverlapMember], kind: Overlap) -> Words {
    let who = obj(&nads[0].obj);
    let n = nads.len();
    let mine = &nads[0].ranges;
    // the others by name while they are few, else how many and the first four
    let others = |f: &dyn Fn(&OverlapMember) -> String| {
        let named: Vec<String> = nads[1..].iter().take(4).map(f).collect();
        if n - 1 <= named.len() {
            named.join(", ")
        } else {
            format!("{} other NADs ({}, ...)", n - 1, named.join(", "))
        }
    };
    let mut x = match kind {
        Overlap::SharedPool => w(
            format!("{who} and {} share one whereabouts pool ({mine})", others(&|m| obj(&m.obj))),
            "The same range without a different network_name is one IPPool: addresses are unique across these NADs, which is fine when intended.",
            vec!["set network_name on each if they are meant to be separate networks (and then give them ranges that do not overlap)".into()],
        ),
        Overlap::SeparatePools => {
            let mut names: Vec<&str> = nads
                .iter()
                .map(|m| m.network_name.as_deref().unwrap_or("none"))
                .collect();
            names.sort_unstable();
            names.dedup();
            let quoted: Vec<String> = names.iter().take(4).map(|n| format!("{n:?}")).collect();
            w(
                format!(
                    "{who} ({mine}) overlaps {} in a separate pool: the same address can go to two pods",
                    others(&|m| format!("{} ({})", obj(&m.obj), m.ranges))
                ),
                format!("whereabouts keeps one IPPool per range and network_name (here {}); pools do not know about each other.", few_of(quoted, names.len())),
                vec!["use ranges that do not overlap, or the very same range and network_name to share one pool".into()],
            )
        }
        Overlap::AcrossRails => w(
            format!(
                "{who} ({mine}, resource {}) overlaps {}: two rails share addresses",
                nads[0].resource.as_deref().unwrap_or("none"),
                others(&|m| format!(
                    "{} ({}, resource {})",
                    obj(&m.obj),
                    m.ranges,
                    m.resource.as_deref().unwrap_or("none")
                ))
            ),
            "Different resources are different PFs and ToRs: overlapping ranges give duplicate addresses and routes that point at the wrong rail.",
            vec!["give every rail its own subnet and range".into()],
        ),
    };
    for m in nads.iter().take(OVERLAP_EVIDENCE) {
        x.evidence.push(ev(obj(&m.obj), member_facts(m)));
    }
    if n > OVERLAP_EVIDENCE {
        x.evidence.push(ev(
            format!("and {} more", n - OVERLAP_EVIDENCE),
            format!("{n} NADs in all (every one in the JSON report's `nads`)"),
        ));
    }
    x
}

fn member_facts(m: &OverlapMember) -> String {
    format!(
        "{}, resource {}, network_name {}",
        m.ranges,
        m.resource.as_deref().unwrap_or("none"),
        m.network_name.as_deref().unwrap_or("none")
    )
}
