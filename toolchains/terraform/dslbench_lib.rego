# Helpers for task policies (package dslbench.tf), loaded next to every policy.
# The input is the JSON plan of `terraform show -json` (or, without terraform, a pseudo plan of the
# same shape built from the parsed configuration).
package dslbench.tf

import rego.v1

# resource_changes entries of managed resources of type t (one per instance: count/for_each expanded).
changes(t) := [rc |
	some rc in input.resource_changes
	rc.type == t
	rc.mode == "managed"
]

# Planned values (change.after) of the instances of type t.
resources(t) := [rc.change.after | some rc in changes(t)]

# Root-module configuration blocks of managed resources of type t (one per block, not per instance).
configs(t) := [r |
	some r in input.configuration.root_module.resources
	r.type == t
	r.mode == "managed"
]

# The configuration block of a resource_changes entry.
config_of(rc) := c if {
	some c in input.configuration.root_module.resources
	c.type == rc.type
	c.name == rc.name
	c.mode == rc.mode
}

# Does a configuration expression refer to the object at address a (or to one of its attributes or
# instances)? `e` is an entry of a block's `expressions` map.
refers(e, a) if {
	some ref in e.references
	ref_matches(ref, a)
}

# A resource config's attribute `key` refers to address `a` directly, or through `each.value` when the
# resource iterates (for_each) over something that refers to `a` (for_each = aws_iam_user.u with
# user = each.value.name refers to aws_iam_user.u).
refers_in(c, key, a) if refers(c.expressions[key], a)

refers_in(c, key, a) if {
	some ref in c.expressions[key].references
	ref_matches(ref, "each.value")
	refers(c.for_each_expression, a)
}

ref_matches(ref, a) if ref == a

ref_matches(ref, a) if startswith(ref, concat("", [a, "."]))

ref_matches(ref, a) if startswith(ref, concat("", [a, "["]))

# Value of a possibly missing or null attribute, with a default.
get(obj, key, default_value) := v if {
	v := obj[key]
	v != null
} else := default_value

# The single nested block `name` of an object (blocks are lists in the plan JSON), or {}.
block(obj, name) := b if {
	b := obj[name][0]
} else := {}

# Is the attribute known only after apply?
unknown(rc, key) if rc.change.after_unknown[key] == true

# A JSON document attribute (IAM policies, redrive policies) decoded, or {} when unknown or invalid.
doc(s) := d if {
	is_string(s)
	d := json.unmarshal(s)
} else := {}

# The statements of an IAM policy document as a list (a single statement object is allowed).
statements(d) := s if {
	is_array(d.Statement)
	s := d.Statement
} else := [d.Statement] if {
	is_object(d.Statement)
} else := []

# A value that may be a string or a list of strings, as a set.
as_set(x) := {x} if is_string(x)

else := {v | some v in x} if is_array(x)

else := set()

# Problems with the region of the default aws provider configuration, as messages (empty when it is
# `want`, or when it comes from something a plan does not record, such as a local value).
# (Messages use concat: regopy 1.5 quotes string arguments of a function given to sprintf's %s.)
region_problems(want) := {msg |
	not input.configuration.provider_config.aws.expressions.region
	msg := concat("", ["the aws provider sets no region (expected ", want, ")"])
} if {
	not input.configuration.provider_config.aws.expressions.region
} else := {msg |
	r := provider_region
	r != want
	msg := concat("", [sprintf("the aws provider region is %v", [r]), ", expected ", want])
}

provider_region := r if {
	r := input.configuration.provider_config.aws.expressions.region.constant_value
} else := r if {
	refs := input.configuration.provider_config.aws.expressions.region.references
	count(refs) == 1
	startswith(refs[0], "var.")
	r := input.variables[substring(refs[0], 4, -1)].value
}
