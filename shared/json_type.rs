//! How a JSON value's type is named in messages ("expected an object,
//! found a string"): one wording for every reader of user JSON.

use serde_json::Value;

/// "null", "a boolean", "a number", "a string", "an array", "an object".
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
