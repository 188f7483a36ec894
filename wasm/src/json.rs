//! A minimal JSON writer for the flat records this crate returns (the
//! timeline, the node list): strings escaped per RFC 8259, numbers as
//! integers. Smaller in the module than a general serializer.

use core::fmt::Write;

/// Builds one JSON object.
pub struct Object<'a> {
    out: &'a mut String,
    first: bool,
}

impl<'a> Object<'a> {
    /// Opens an object at the end of `out`.
    pub fn open(out: &'a mut String) -> Self {
        out.push('{');
        Self { out, first: true }
    }

    fn key(&mut self, key: &str) -> &mut String {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        string(self.out, key);
        self.out.push(':');
        self.out
    }

    /// `"key": "value"`.
    pub fn str(&mut self, key: &str, value: &str) -> &mut Self {
        string(self.key(key), value);
        self
    }

    /// `"key": "value"` or `"key": null`.
    pub fn opt_str(&mut self, key: &str, value: Option<&str>) -> &mut Self {
        match value {
            Some(v) => self.str(key, v),
            None => {
                self.key(key).push_str("null");
                self
            }
        }
    }

    /// `"key": 123`.
    pub fn num(&mut self, key: &str, value: u64) -> &mut Self {
        let _ = write!(self.key(key), "{value}");
        self
    }

    /// `"key": true|false`.
    pub fn bool(&mut self, key: &str, value: bool) -> &mut Self {
        self.key(key).push_str(if value { "true" } else { "false" });
        self
    }

    /// `"key": <raw JSON>`, for a nested value built by the caller.
    pub fn raw(&mut self, key: &str, json: &str) -> &mut Self {
        self.key(key).push_str(json);
        self
    }

    /// Closes the object.
    pub fn close(&mut self) {
        self.out.push('}');
    }
}

/// Appends `value` as a JSON string.
pub fn string(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_valid_escaped_json() {
        let mut out = String::new();
        Object::open(&mut out)
            .str("id", "a\"b\\c\n\u{1}κ")
            .opt_str("none", None)
            .num("n", 42)
            .bool("ok", true)
            .raw("list", "[1,2]")
            .close();
        assert_eq!(
            out,
            r#"{"id":"a\"b\\c\n\u0001κ","none":null,"n":42,"ok":true,"list":[1,2]}"#
        );
        let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(parsed["id"], "a\"b\\c\n\u{1}κ");
    }
}
