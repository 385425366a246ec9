//! Value parsers that name what is wrong and what is allowed.

/// A whole number in `lo..=hi`.
pub fn count_in(s: &str, lo: u64, hi: u64) -> Result<u64, String> {
    let v: i128 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a whole number; allowed {lo}..={hi}"))?;
    if v < lo as i128 || v > hi as i128 {
        return Err(format!("{v} is out of range; allowed {lo}..={hi}"));
    }
    Ok(v as u64)
}

/// A finite number in `lo..=hi`.
pub fn number_in(s: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number; allowed {lo}..={hi}"))?;
    if !v.is_finite() {
        return Err(format!("`{s}` is not a finite number; allowed {lo}..={hi}"));
    }
    if v < lo || v > hi {
        return Err(format!("{v} is out of range; allowed a finite number in {lo}..={hi}"));
    }
    Ok(v)
}
