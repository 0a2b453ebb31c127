//! A flow's counters by their report keys ([`FlowCounters::named`], from the one list
//! in `analysis::counters`), in the order every report writes them. Serde goes through
//! it (`Serialize` for [`FlowCounters`], flattened into a flow's JSON object and CSV row,
//! both written through serde by `crate::report`).

use crate::analysis::flow::{FlowCounters, N_COUNTERS};
use serde::ser::{Serialize, SerializeStruct, Serializer};

impl Serialize for FlowCounters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("FlowCounters", N_COUNTERS)?;
        for (key, v) in self.named() {
            st.serialize_field(key, &v)?;
        }
        st.end()
    }
}
