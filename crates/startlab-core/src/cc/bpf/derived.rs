//! Values a port reads that are not parameters but are computed from them in user space, where
//! there is floating point (tables, logarithms), by algorithm and member name.

use serde_json::{Map, Value};

/// The bytes of member `member` of `algorithm`'s configuration, if it is a derived value;
/// `bytes` is the member's size.
pub fn member(
    algorithm: &str,
    member: &str,
    params: &Map<String, Value>,
    bytes: usize,
) -> Result<Option<Vec<u8>>, String> {
    let _ = (params, bytes);
    match (algorithm, member) {
        ("hstcp", "table") => hstcp_table(params, bytes).map(Some),
        _ => Ok(None),
    }
}

/// HighSpeed TCP's response function (bpf/cc/hstcp.bpf.c, `struct hstcp_row table[N]`): N rows
/// of three little-endian u64, the window `w` (segments x 2^16), `a(w)` (segments x 2^16, capped
/// at 2^32 - 1) and `b(w)` (x 2^32), at windows spaced geometrically from `low_window` (row 0)
/// to `high_window` (row N - 1), a and b from the Rust model's own `Hstcp::increase` and
/// `Hstcp::decrease` (RFC 3649); one row moves to where the model's a(w) = max(formula, 1)
/// bends.
fn hstcp_table(params: &Map<String, Value>, bytes: usize) -> Result<Vec<u8>, String> {
    use crate::cc::hstcp::{Hstcp, HstcpConfig};
    const ROW: usize = 24;
    if !bytes.is_multiple_of(ROW) || bytes / ROW < 2 {
        return Err(format!(
            "hstcp table of {bytes} bytes: expected rows of {ROW} bytes, at least 2"
        ));
    }
    let rows = bytes / ROW;
    let config: HstcpConfig = serde_json::from_value(Value::Object(params.clone()))
        .map_err(|e| format!("hstcp parameters: {e}"))?;
    let (lw, hw) = (config.low_window, config.high_window);
    let h = Hstcp::new(config)?;
    let q = |x: f64, bits: i32, max: f64| (x * 2f64.powi(bits)).round().clamp(0.0, max) as u64;
    let mut ws: Vec<f64> = (0..rows)
        .map(|i| {
            if i + 1 == rows {
                hw
            } else {
                lw * (hw / lw).powf(i as f64 / (rows - 1) as f64)
            }
        })
        .collect();
    // The model holds a(w) at 1 just above low_window, where the formula is below it (RFC 3649
    // with the default parameters: up to w = 40.75): the row nearest to where the formula passes
    // 1 moves there (unless it is the first or the last), so that interpolation follows the bend.
    let (mut lo, mut hi) = (lw, hw);
    if h.increase(hi) > 1.0 {
        for _ in 0..100 {
            let mid = (lo * hi).sqrt();
            if h.increase(mid) > 1.0 {
                hi = mid
            } else {
                lo = mid
            }
        }
        let i = (0..rows)
            .min_by(|&i, &j| (ws[i] / lo).ln().abs().total_cmp(&(ws[j] / lo).ln().abs()))
            .unwrap();
        if i > 0 && i + 1 < rows && ws[i - 1] < lo && lo < ws[i + 1] {
            ws[i] = lo;
        }
    }
    let mut out = Vec::with_capacity(bytes);
    for w in ws {
        let row = [
            q(w, 16, u64::MAX as f64),
            q(h.increase(w), 16, u32::MAX as f64),
            q(h.decrease(w), 32, u64::MAX as f64),
        ];
        for v in row {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(params: Value, n: usize) -> Vec<[u64; 3]> {
        let bytes = member("hstcp", "table", params.as_object().unwrap(), n * 24)
            .unwrap()
            .unwrap();
        bytes
            .chunks(24)
            .map(|r| [0, 1, 2].map(|k| u64::from_le_bytes(r[8 * k..8 * k + 8].try_into().unwrap())))
            .collect()
    }

    fn defaults() -> Value {
        serde_json::json!({"low_window": 38.0, "high_window": 83000.0, "high_p": 1e-7, "high_decrease": 0.1})
    }

    fn close(got: u64, want: f64, bits: i32, tol: f64) -> bool {
        (got as f64 / 2f64.powi(bits) - want).abs() <= tol
    }

    /// Three rows with the RFC 3649 defaults (Low_Window 38, High_Window 83000, High_P 1e-7,
    /// High_Decrease 0.1), by hand:
    /// - w = 38: standard TCP, a = 1, b = 0.5;
    /// - w = sqrt(38 x 83000) = 1775.950, halfway on the log scale: b = 0.5 + (0.1 - 0.5) / 2
    ///   = 0.3; p = sqrt(Low_P x High_P) with Low_P = 0.078 / 38^1.2 = 9.916406e-4, so
    ///   p = 9.958115e-6 and a = w^2 p 2b / (2 - b) = 3154000 x 9.958115e-6 x 0.6 / 1.7
    ///   = 11.08514;
    /// - w = 83000: b = High_Decrease = 0.1, a = 83000^2 x 1e-7 x 0.2 / 1.9 = 72.51579.
    #[test]
    fn hstcp_rows_follow_rfc_3649() {
        let t = rows(defaults(), 3);
        assert!(
            close(t[0][0], 38.0, 16, 1e-4)
                && close(t[0][1], 1.0, 16, 1e-4)
                && close(t[0][2], 0.5, 32, 1e-9)
        );
        assert!(
            close(t[1][0], 1775.950, 16, 1e-3),
            "{}",
            t[1][0] as f64 / 65536.0
        );
        assert!(
            close(t[1][1], 11.08514, 16, 1e-4),
            "{}",
            t[1][1] as f64 / 65536.0
        );
        assert!(close(t[1][2], 0.3, 32, 1e-9));
        assert!(close(t[2][0], 83000.0, 16, 1e-4));
        assert!(
            close(t[2][1], 72.51579, 16, 1e-4),
            "{}",
            t[2][1] as f64 / 65536.0
        );
        assert!(close(t[2][2], 0.1, 32, 1e-9));
    }

    /// The port's 128 rows: windows rise geometrically, a rises, b falls, and row 0 is standard
    /// TCP; linear interpolation between rows stays within 0.1 % of the model's a(w).
    #[test]
    fn hstcp_table_is_monotone_and_fine_enough() {
        use crate::cc::hstcp::{Hstcp, HstcpConfig};
        let t = rows(defaults(), 128);
        assert_eq!(t[0], [38 << 16, 1 << 16, 1 << 31]);
        for r in t.windows(2) {
            assert!(r[1][0] > r[0][0] && r[1][1] >= r[0][1] && r[1][2] <= r[0][2]);
        }
        let h = Hstcp::new(HstcpConfig::default()).unwrap();
        for r in t.windows(2) {
            let (w0, w1) = (r[0][0] as f64, r[1][0] as f64);
            for k in 1..8 {
                let w = w0 + (w1 - w0) * k as f64 / 8.0;
                let f = (w - w0) / (w1 - w0);
                let a = (r[0][1] as f64 + (r[1][1] as f64 - r[0][1] as f64) * f) / 65536.0;
                let want = h.increase(w / 65536.0);
                assert!(
                    (a / want - 1.0).abs() < 1e-3,
                    "a({}) = {a}, model {want}",
                    w / 65536.0
                );
            }
        }
    }

    #[test]
    fn hstcp_refuses_a_table_of_odd_size_and_bad_parameters() {
        let p = defaults();
        assert!(member("hstcp", "table", p.as_object().unwrap(), 25).is_err());
        let bad = serde_json::json!({"low_window": 38.0, "high_window": 30.0, "high_p": 1e-7, "high_decrease": 0.1});
        assert!(member("hstcp", "table", bad.as_object().unwrap(), 48).is_err());
    }
}
