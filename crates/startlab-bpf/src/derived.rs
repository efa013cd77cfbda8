//! Values a port reads that are not parameters but are computed from them in user space, where
//! there is floating point (tables, logarithms), by algorithm and member name.

use serde_json::{Map, Value};

/// The bytes of member `member` of `algorithm`'s configuration, if it is a derived value;
/// `bytes` is the member's size.
pub fn member(algorithm: &str, member: &str, params: &Map<String, Value>, bytes: usize) -> Result<Option<Vec<u8>>, String> {
    let _ = (params, bytes);
    match (algorithm, member) {
        _ => Ok(None),
    }
}
