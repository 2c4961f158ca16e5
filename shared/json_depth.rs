//! How deeply a JSON value nests, and how deep jkz can read back.
//!
//! Every reader in jkz parses with `serde_json`'s default recursion limit
//! (which is what keeps a hostile `[[[[…` from overflowing the stack). A
//! document nested deeper than that is valid JSON jkz could write but never
//! read again: a pipeline file or session record written that deep would be
//! lost to every later read-modify-write. So writers check the depth of what
//! they are about to write against [`MAX_READABLE_DEPTH`].

use serde_json::Value;

/// The deepest nesting (arrays and objects inside each other) `serde_json`
/// parses with its default recursion limit; `readable_depth_is_serde_jsons`
/// holds this to the library's behaviour.
pub const MAX_READABLE_DEPTH: usize = 127;

/// The number of nested containers in `value`: 0 for a scalar, 1 for `[]`
/// or `{}` or a flat array/object, 2 for `[[1]]`, … Iterative, so a value
/// built in memory however deep cannot overflow the stack here.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(value, 1usize)];
    while let Some((v, level)) = pending.pop() {
        match v {
            Value::Array(items) => {
                deepest = deepest.max(level);
                pending.extend(items.iter().map(|i| (i, level + 1)));
            }
            Value::Object(map) => {
                deepest = deepest.max(level);
                pending.extend(map.values().map(|i| (i, level + 1)));
            }
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn readable_depth_is_serde_jsons() {
        let deepest: Value = serde_json::from_str(&nested(MAX_READABLE_DEPTH)).unwrap();
        assert_eq!(depth(&deepest), MAX_READABLE_DEPTH);
        let err = serde_json::from_str::<Value>(&nested(MAX_READABLE_DEPTH + 1)).unwrap_err();
        assert!(err.to_string().contains("recursion limit"), "{err}");
    }

    #[test]
    fn counts_containers_not_scalars() {
        for (text, want) in [
            ("1", 0),
            ("\"[[[\"", 0),
            ("[]", 1),
            ("{}", 1),
            ("{\"a\":[1,{\"b\":[]}],\"c\":2}", 4),
            ("[[1],[[2]],3]", 3),
        ] {
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(depth(&v), want, "{text}");
        }
    }
}
