"""What the rules in kvlint/checks share, one module per subject:

- `args`: what a call passes for a parameter (keyword, `**dict` key or position), its
  literal candidates, whether it omits one; `roles`: the same by role (mask, scale, window),
  whatever the operator calls it (rules/facts/operators.toml)
- `results`: how a call's result is bound and whether a bound name is read later
- `tensors`: what a tensor argument visibly is (factory dims, views, NZ layout, last dim)
- `masks`: where an atten_mask is built; `sparse`: a call's sparse_mode and mask, token windows
- `windows`: where a pre_tokens window comes from
- `keywords`: keywords a schema lacks, the other FA version's names, rename fixes
- `fixes`: position-exact text edits for fixes
- `epilog`: the kv_compress_epilog bindings
"""
