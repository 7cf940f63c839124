//! Placeholder (being written).

fn main() {}
