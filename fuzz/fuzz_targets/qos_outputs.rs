//! Fuzz target: the parsers of recorded DCB tool output (`netcheck --qos-from`:
//! `dcb app show`, `dcb apptrust show`, `dcb pfc show`, `mlnx_qos -i`). They must never
//! panic, and what they accept is in range: DSCPs below 64, priorities below 8.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocetap::netcheck::dcb::{
    parse_dcb_app, parse_dcb_apptrust, parse_dcb_pfc, parse_mlnx_qos, Dcb, DcbError,
};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    type Parse = fn(&str, &mut Dcb) -> Result<(), DcbError>;
    let parsers: [Parse; 4] = [
        parse_dcb_app,
        parse_dcb_apptrust,
        parse_dcb_pfc,
        parse_mlnx_qos,
    ];
    for parse in parsers {
        let mut d = Dcb::default();
        let _ = parse(s, &mut d);
        for (&dscp, &prio) in &d.dscp_prio {
            assert!(dscp < 64 && prio < 8, "{dscp}:{prio} out of range");
        }
        if let Some(t) = &d.trust {
            assert!(t == "dscp" || t == "pcp", "trust {t:?}");
        }
    }
});
