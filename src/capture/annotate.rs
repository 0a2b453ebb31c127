//! Per-packet comments for `rocetap capture --annotate` (pcapng): a few words on each RoCE
//! frame that is worth a look in Wireshark — NAKs with their code, RNR NAKs, CNPs, ECN CE
//! marks, bad ICRCs and PSN gaps.
//!
//! The header facts come from the decoded frame; PSN gaps come from the analyzer, which
//! the capture's pipeline feeds before the frame is written: the gaps it opened on this
//! packet ([`Analyzer::packet_events`]) — request streams of the connected transports
//! and READ responses, with 24-bit serial arithmetic, READ spans and retransmissions
//! told apart the way `analyze` tells them. Nothing is tracked here.
//!
//! Some capture paths do not preserve the ICRC (every frame fails it): once at least
//! [`ICRC_SAMPLE`] ICRCs were checked and most were bad, "ICRC bad" is a property of the
//! capture, not news about a packet, and is no longer written on each frame
//! ([`Annotator::icrc_unreliable`] tells the caller).

use crate::analysis::{Analyzer, EventKind};
use dissectors::{AethKind, Decoded, Ecn, IcrcStatus, Psn};
use std::fmt::Write as _;

/// ICRCs checked before judging whether the capture path preserves them.
pub const ICRC_SAMPLE: u64 = 32;

/// Writes the comments; keeps only the ICRC statistics and a reused text buffer.
#[derive(Default)]
pub struct Annotator {
    text: String,
    icrc_checked: u64,
    icrc_bad: u64,
}

impl Annotator {
    /// An annotator that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when most ICRCs checked so far were bad (after [`ICRC_SAMPLE`] of them):
    /// the capture path does not preserve them.
    pub fn icrc_unreliable(&self) -> bool {
        self.icrc_checked >= ICRC_SAMPLE && self.icrc_bad * 2 > self.icrc_checked
    }

    /// (checked, bad) ICRC counts.
    pub fn icrc_counts(&self) -> (u64, u64) {
        (self.icrc_checked, self.icrc_bad)
    }

    /// The comment for one decoded frame, which `an` has just been fed, or `None` when
    /// there is nothing to say. The returned text is reused by the next call.
    pub fn comment(&mut self, d: &Decoded, an: &Analyzer) -> Option<&str> {
        let roce = d.roce.as_ref()?;
        self.text.clear();
        let t = &mut self.text;
        let note = |t: &mut String, s: std::fmt::Arguments<'_>| {
            if !t.is_empty() {
                t.push_str("; ");
            }
            let _ = t.write_fmt(s);
        };
        if roce.is_cnp() {
            note(t, format_args!("CNP for QP {}", roce.bth.dest_qp));
        }
        if let Some(a) = roce.aeth {
            match a.kind() {
                AethKind::Nak(code) => note(
                    t,
                    format_args!(
                        "NAK 0x{:02x} {} (PSN {})",
                        a.syndrome,
                        code.name(),
                        roce.bth.psn
                    ),
                ),
                AethKind::RnrNak { timer } => note(
                    t,
                    format_args!(
                        "RNR NAK, timer {} ({} ms)",
                        timer,
                        dissectors::ib::aeth::rnr_timer_us(timer) / 1000.0
                    ),
                ),
                _ => {}
            }
        }
        if d.ecn() == Some(Ecn::Ce) {
            note(t, format_args!("ECN CE"));
        }
        if matches!(roce.icrc, IcrcStatus::Ok | IcrcStatus::Bad) {
            self.icrc_checked += 1;
            self.icrc_bad += u64::from(roce.icrc == IcrcStatus::Bad);
        }
        let icrc_news =
            !(self.icrc_checked >= ICRC_SAMPLE && self.icrc_bad * 2 > self.icrc_checked);
        let t = &mut self.text;
        if roce.icrc == IcrcStatus::Bad && icrc_news {
            match (roce.icrc_stored, roce.icrc_computed) {
                (Some(s), Some(c)) => note(
                    t,
                    format_args!("ICRC bad: stored 0x{s:08x}, computed 0x{c:08x}"),
                ),
                _ => note(t, format_args!("ICRC bad")),
            }
        }
        // The gaps this packet opened: `psn` is the first missing PSN, `count` how many.
        for e in an.packet_events().as_slice() {
            if let (EventKind::PsnGap, Some(start)) = (e.kind, e.psn) {
                let exp = Psn(start);
                let got = exp.plus(e.count as u32);
                note(t, format_args!("PSN gap: expected {exp}, got {got}"));
            }
        }
        if self.text.is_empty() {
            None
        } else {
            Some(&self.text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dissectors::{Config, LinkType};

    /// Ethernet / IPv4 / UDP 4791 / BTH [/ AETH] / ICRC, with a correct ICRC unless
    /// `bad_icrc`.
    fn frame(opcode: u8, qp: u32, psn: u32, aeth: Option<u8>, tos: u8, bad_icrc: bool) -> Vec<u8> {
        let qp = qp.to_be_bytes();
        let psn = psn.to_be_bytes();
        let mut bth = vec![
            opcode, 0, 0xff, 0xff, 0, qp[1], qp[2], qp[3], 0, psn[1], psn[2], psn[3],
        ];
        if let Some(s) = aeth {
            bth.extend_from_slice(&[s, 0, 0, 1]);
        }
        if opcode == 0x81 {
            bth.extend_from_slice(&[0; 16]);
        }
        if opcode == 0x0c {
            // RETH: VA, R_Key, a DMA length of 12 KiB.
            bth.extend_from_slice(&[0; 12]);
            bth.extend_from_slice(&12288u32.to_be_bytes());
        }
        let mut ip_payload = vec![0xc0, 0x00, 0x12, 0xb7];
        ip_payload.extend_from_slice(&((8 + bth.len() + 4) as u16).to_be_bytes());
        ip_payload.extend_from_slice(&[0, 0]);
        ip_payload.extend_from_slice(&bth);
        let mut ip = vec![0x45, tos];
        ip.extend_from_slice(&((20 + ip_payload.len() + 4) as u16).to_be_bytes());
        ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2]);
        let crc = dissectors::ib::icrc::roce_v2(&ip, &ip_payload);
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&ip);
        f.extend_from_slice(&ip_payload);
        let crc = if bad_icrc { crc ^ 1 } else { crc };
        f.extend_from_slice(&crc.to_le_bytes());
        f
    }

    /// Feeds the frame to the analyzer (as the capture's pipeline does), then annotates.
    fn note((a, an, n): &mut (Annotator, Analyzer, u64), f: &[u8]) -> Option<String> {
        let d = dissectors::decode(
            LinkType::Ethernet,
            f,
            f.len() as u32,
            &Config {
                roce_port: 4791,
                check_icrc: true,
            },
        );
        assert!(d.roce.is_some(), "{:?}", d.stop);
        *n += 1;
        an.ingest(*n * 1000, 0, &d);
        a.comment(&d, an).map(str::to_string)
    }

    fn annotator() -> (Annotator, Analyzer, u64) {
        (Annotator::new(), Analyzer::new(Default::default()), 0)
    }

    #[test]
    fn notable_packets_get_comments() {
        let mut a = annotator();
        // SEND Only, PSN 100, 101 (fine), 104 (gap), 102 (late retransmission: no gap).
        assert_eq!(note(&mut a, &frame(0x04, 0x11, 100, None, 2, false)), None);
        assert_eq!(note(&mut a, &frame(0x04, 0x11, 101, None, 2, false)), None);
        assert_eq!(
            note(&mut a, &frame(0x04, 0x11, 104, None, 2, false)).as_deref(),
            Some("PSN gap: expected 102, got 104")
        );
        assert_eq!(note(&mut a, &frame(0x04, 0x11, 102, None, 2, false)), None);
        assert_eq!(note(&mut a, &frame(0x04, 0x11, 105, None, 2, false)), None);
        // Another QP is tracked on its own.
        assert_eq!(note(&mut a, &frame(0x04, 0x12, 7, None, 2, false)), None);
        // PSN wraparound is not a gap.
        assert_eq!(
            note(&mut a, &frame(0x04, 0x13, 0xff_ffff, None, 2, false)),
            None
        );
        assert_eq!(note(&mut a, &frame(0x04, 0x13, 0, None, 2, false)), None);
        // A 12 KiB READ Request (PMTU not known yet) takes the PSNs up to the next
        // request, 8..=19 at a PMTU of 1024: 20 is no gap, 23 after it is.
        assert_eq!(note(&mut a, &frame(0x0c, 0x12, 8, None, 2, false)), None);
        assert_eq!(note(&mut a, &frame(0x04, 0x12, 20, None, 2, false)), None);
        assert_eq!(
            note(&mut a, &frame(0x04, 0x12, 23, None, 2, false)).as_deref(),
            Some("PSN gap: expected 21, got 23")
        );
        // NAK, RNR NAK, CNP, CE + bad ICRC.
        assert_eq!(
            note(&mut a, &frame(0x11, 0x21, 102, Some(0x60), 2, false)).as_deref(),
            Some("NAK 0x60 PSN sequence error (PSN 102)")
        );
        assert_eq!(
            note(&mut a, &frame(0x11, 0x21, 5, Some(0x2e), 2, false)).as_deref(),
            Some("RNR NAK, timer 14 (1.28 ms)")
        );
        assert_eq!(
            note(&mut a, &frame(0x11, 0x21, 5, Some(0x1f), 2, false)),
            None
        );
        let cnp = note(&mut a, &frame(0x81, 0xa022, 0, None, 0, false)).unwrap();
        assert!(cnp.starts_with("CNP for QP 0x00a022"), "{cnp}");
        let ce = note(&mut a, &frame(0x04, 0x11, 106, None, 3, true)).unwrap();
        assert!(ce.starts_with("ECN CE; ICRC bad: stored 0x"), "{ce}");
        assert!(!a.0.icrc_unreliable());
    }

    #[test]
    fn a_capture_that_breaks_every_icrc_stops_saying_so_per_frame() {
        let mut a = annotator();
        let mut said = 0;
        for i in 0..100 {
            if note(&mut a, &frame(0x04, 0x11, i, None, 2, true)).is_some() {
                said += 1;
            }
        }
        assert_eq!(
            said,
            ICRC_SAMPLE - 1,
            "said until the sample showed the pattern"
        );
        assert!(a.0.icrc_unreliable());
        assert_eq!(a.0.icrc_counts(), (100, 100));
        // Mostly good ICRCs: each bad one is news.
        let mut b = annotator();
        for i in 0..100 {
            let bad = i % 10 == 0;
            let n = note(&mut b, &frame(0x04, 0x11, i, None, 2, bad));
            assert_eq!(n.is_some(), bad, "frame {i}");
        }
        assert!(!b.0.icrc_unreliable());
    }
}
