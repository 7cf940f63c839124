//! `task --output-schema FILE`: reading the schema file.

use std::io::Read as _;
use std::path::Path;

use subagents::schema::{OutputSchema, Profile};

use crate::error::CliError;

/// The schema in `path`: JSON, at most the host profile's size, accepted by the validator.
pub(crate) fn read_schema(path: &Path) -> Result<serde_json::Value, CliError> {
    let shown = path.display();
    let max = Profile::host().max_bytes;
    let file = std::fs::File::open(path)
        .map_err(|e| CliError::Config(format!("--output-schema {shown}: {e}")))?;
    let mut text = Vec::new();
    file.take(max as u64 + 1)
        .read_to_end(&mut text)
        .map_err(|e| CliError::Config(format!("--output-schema {shown}: {e}")))?;
    if text.len() > max {
        return Err(CliError::Config(format!(
            "--output-schema {shown}: the file is larger than {max} bytes"
        )));
    }
    let schema: serde_json::Value = serde_json::from_slice(&text)
        .map_err(|e| CliError::Config(format!("--output-schema {shown}: not JSON: {e}")))?;
    OutputSchema::compile(&schema, Profile::host())
        .map_err(|e| CliError::Config(format!("--output-schema {shown}: {e}")))?;
    Ok(schema)
}
