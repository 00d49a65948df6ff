//! Wrong signatures and ids that cannot be ids under `#[gpu_bench]` fail to compile
//! with a message that says what they must be.

#[test]
fn bad_signatures_are_clear_compile_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}
