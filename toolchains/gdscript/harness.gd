# DSL-Bench GDScript task harness (Godot 3). Runs inside the sandbox:
#   godot3-server --no-window -s harness.gd   (stdout and stderr merged by the caller)
# Reads plan.json (written by validator.py), then for each script in plan.scripts (the validator runs
# the gold and the candidate in two separate sandboxed runs) and each scenario: loads the script,
# guards can_instance(), creates a fresh instance, runs the steps and prints one line per step:
#   <tag> STEP <script> <scenario> <step>        before the step (runtime errors print after it)
#   <tag> RES <script> <scenario> <step> <json>  after the step
# Values are serialised to a tagged JSON tree so Vector2, Dictionary and objects compare exactly.
extends SceneTree

var tag := ""
var started := false
var recorded := {}
var probes := {}


func _idle(_delta):
	if started:
		return false
	started = true
	var f := File.new()
	if f.open("res://plan.json", File.READ) != OK:
		print("DSLBENCH-HARNESS cannot read plan.json")
		quit(3)
		return false
	var parsed := JSON.parse(f.get_as_text())
	f.close()
	if parsed.error != OK:
		print("DSLBENCH-HARNESS plan.json is not JSON")
		quit(3)
		return false
	var plan: Dictionary = parsed.result
	tag = plan["tag"]
	# The oracle's probes: its own functions that reduce what a script made to the values compared.
	for name in plan.get("probes", {}):
		var probe := GDScript.new()
		probe.source_code = plan["probes"][name]
		if probe.reload() != OK:
			print("DSLBENCH-HARNESS the oracle's probe %s does not compile" % name)
			quit(3)
			return false
		probes[name] = probe.new()
	for path in plan["scripts"]:
		run_script(path, plan)
	print(tag, " DONE")
	quit(0)
	return false


func emit(kind: String, path: String, parts: Array) -> void:
	var line := tag + " " + kind + " " + path
	for p in parts:
		line += " " + str(p)
	print(line)


func run_script(path: String, plan: Dictionary) -> void:
	var script = load("res://" + path)
	if script == null or not (script is Script):
		emit("FATAL", path, ["the script does not load"])
		return
	if not script.can_instance():
		emit("FATAL", path, ["the script cannot be instanced (can_instance() is false)"])
		return
	var base: String = plan["base"]
	var scenario_index := 0
	for scenario in plan["scenarios"]:
		recorded = {}
		emit("STEP", path, [scenario_index, -1])
		var inst = script.callv("new", str2var(plan["new_args"]))
		if inst == null:
			emit("FATAL", path, ["new() returned null"])
			return
		if not inst.is_class(base):
			emit("FATAL", path, ["the script extends %s, not %s" % [inst.get_class(), base]])
			return
		var slots := {"self": inst}
		for spec in plan.get("nodes", []):
			add_standin(inst, spec)
		if scenario["tree"]:
			if inst is Node:
				get_root().add_child(inst)
			else:
				emit("FATAL", path, ["only a Node can be added to the scene tree"])
				return
		var step_index := 0
		for step in scenario["steps"]:
			emit("STEP", path, [scenario_index, step_index])
			var result = run_step(script, step, slots)
			emit("RES", path, [scenario_index, step_index, JSON.print(result)])
			step_index += 1
		if inst is Node and is_instance_valid(inst):
			if inst.is_inside_tree():
				get_root().remove_child(inst)
			inst.free()
		scenario_index += 1


# A stand-in for a node of the course scene that the script reaches ($Name, find_node("Name")):
# a node of the scene's type, with the literal values the scene gives it, whose script adds the
# methods, properties and signals the script uses that the type lacks; the methods do nothing but
# record their calls in `dslbench_calls`. A node with a `script` (a context file: the scene's own
# script of the node) runs that script instead. Nodes are added in the order given (parents first).
func add_standin(inst: Node, spec: Dictionary) -> void:
	var parent: Node = inst
	var parts: Array = spec["path"].split("/")
	for k in range(parts.size()):
		var node = parent.get_node_or_null(parts[k])
		if node == null:
			node = make_standin(spec) if k == parts.size() - 1 else Node2D.new()
			node.name = parts[k]
			parent.add_child(node)
			node.owner = inst
			if k == parts.size() - 1:
				# The scene's own literal values of the node (a label's text, a hidden item).
				var values: Dictionary = spec.get("values", {})
				for prop in values:
					node.set(prop, str2var(values[prop]))
		parent = node


func make_standin(spec: Dictionary) -> Node:
	var type: String = spec["type"]
	if not ClassDB.class_exists(type) or not ClassDB.can_instance(type) or not ClassDB.is_parent_class(type, "Node"):
		type = "Node"
	if spec.get("script", "") != "":
		# The scene's own script of the node (a task context file), run as the course runs it.
		var own: Node = ClassDB.instance(type)
		own.set_script(load("res://" + spec["script"]))
		return own
	var native_props := []
	for p in ClassDB.class_get_property_list(type):
		native_props.append(p["name"])
	var src := "extends %s\n\nvar dslbench_calls := []\n" % type
	for name in spec["signals"]:
		if not ClassDB.class_has_signal(type, name):
			src += "signal %s\n" % name
	for name in spec["props"]:
		if not name in native_props and not name in spec["methods"]:
			src += "var %s\n" % name
	for name in spec["methods"]:
		if not ClassDB.class_has_method(type, name):
			src += "func %s(a = null, b = null, c = null, d = null, e = null, f = null):\n" % name
			src += "\tdslbench_calls.append([\"%s\", a, b, c, d, e, f])\n" % name
	var script := GDScript.new()
	script.source_code = src
	script.reload()
	var node: Node = ClassDB.instance(type)
	node.set_script(script)
	return node


func err(message: String) -> Dictionary:
	return {"__error__": message}


func property_names(target: Object) -> Array:
	var names := []
	for p in target.get_property_list():
		names.append(p["name"])
	return names


func run_step(script, step: Dictionary, slots: Dictionary):
	var op: String = step["op"]
	var name: String = step["name"]
	if op == "const":
		var constants: Dictionary = script.get_script_constant_map()
		if not constants.has(name):
			return err("no constant %s" % name)
		return ser(constants[name], 0)
	if op == "new":
		var constants: Dictionary = script.get_script_constant_map()
		if not constants.has(name) or not (constants[name] is Script):
			return err("no inner class %s" % name)
		var made = constants[name].callv("new", str2var(step["args"]))
		if step["as"] != "":
			slots[step["as"]] = made
		return ser(made, 0)
	if not slots.has(step["on"]):
		return err("no object named %s (an earlier step failed)" % step["on"])
	var target = slots[step["on"]]
	if typeof(target) != TYPE_OBJECT or not is_instance_valid(target):
		return err("%s is not an object" % step["on"])
	if op == "tick":
		# Simulated frames: the engine does not run real frames during the harness, so each frame
		# the tree's idle_frame and physics_frame signals are emitted (a script waiting on one with
		# yield(get_tree(), "idle_frame") resumes, as on a real frame) and the instance's own
		# _process/_physics_process are called while it has processing enabled.
		var delta: float = str2var(step["args"])[0]
		for _frame in range(int(name)):
			if not is_instance_valid(target) or not (target is Node):
				break
			emit_signal("idle_frame")
			if is_instance_valid(target) and target.is_processing() and target.has_method("_process"):
				target._process(delta)
			emit_signal("physics_frame")
			if is_instance_valid(target) and target.is_physics_processing() and target.has_method("_physics_process"):
				target._physics_process(delta)
		return null
	if op == "probe":
		if not probes.has(name):
			return err("no probe %s" % name)
		var out = probes[name].probe(target)
		if step["as"] != "":
			slots[step["as"]] = out
		return ser(out, 0)
	if op == "call":
		if not target.has_method(name):
			return err("no method %s" % name)
		var out = target.callv(name, str2var(step["args"]))
		if step["as"] != "":
			slots[step["as"]] = out
		return ser(out, 0)
	if op == "get":
		if not name in property_names(target):
			return err("no property %s" % name)
		var value = target.get(name)
		if step["as"] != "":
			slots[step["as"]] = value
		return ser(value, 0)
	if op == "set":
		if not name in property_names(target):
			return err("no property %s" % name)
		target.set(name, str2var(step["value"]))
		return null
	if op == "connect":
		if not target.has_signal(name):
			return err("no signal %s" % name)
		var arity := -1
		for s in target.get_signal_list():
			if s["name"] == name:
				arity = s["args"].size()
		if arity > 4:
			return err("signal %s has more than 4 arguments" % name)
		var key: String = step["on"] + ":" + name
		recorded[key] = []
		target.connect(name, self, "_rec%d" % arity, [key])
		return null
	if op == "emitted":
		var key: String = step["on"] + ":" + name
		if not recorded.has(key):
			return err("signal %s was not connected" % name)
		var out = recorded[key]
		recorded[key] = []
		return ser(out, 0)
	return err("unknown step %s" % op)


func _record(key: String, args: Array) -> void:
	if recorded.has(key):
		recorded[key].append(args)


func _rec0(key):
	_record(key, [])


func _rec1(a, key):
	_record(key, [a])


func _rec2(a, b, key):
	_record(key, [a, b])


func _rec3(a, b, c, key):
	_record(key, [a, b, c])


func _rec4(a, b, c, d, key):
	_record(key, [a, b, c, d])


func ser(v, depth: int):
	match typeof(v):
		TYPE_NIL, TYPE_BOOL, TYPE_INT, TYPE_STRING:
			return v
		TYPE_REAL:
			if is_nan(v) or is_inf(v):
				return {"float": str(v)}
			return v
		TYPE_VECTOR2:
			return {"Vector2": [v.x, v.y]}
		TYPE_VECTOR3:
			return {"Vector3": [v.x, v.y, v.z]}
		TYPE_RECT2:
			return {"Rect2": [v.position.x, v.position.y, v.size.x, v.size.y]}
		TYPE_COLOR:
			return {"Color": [v.r, v.g, v.b, v.a]}
		TYPE_ARRAY, TYPE_RAW_ARRAY, TYPE_INT_ARRAY, TYPE_REAL_ARRAY, TYPE_STRING_ARRAY, TYPE_VECTOR2_ARRAY:
			var out := []
			for x in v:
				out.append(ser(x, depth + 1))
			return out
		TYPE_DICTIONARY:
			var pairs := []
			for k in v.keys():
				pairs.append([ser(k, depth + 1), ser(v[k], depth + 1)])
			return {"Dictionary": pairs}
		TYPE_OBJECT:
			if not is_instance_valid(v):
				return {"Object": "freed"}
			var out := {"Object": v.get_class()}
			if depth < 4:
				var props := {}
				for p in v.get_property_list():
					if p["usage"] & PROPERTY_USAGE_SCRIPT_VARIABLE:
						props[p["name"]] = ser(v.get(p["name"]), depth + 1)
				out["props"] = props
			return out
	return {"type": typeof(v), "str": str(v)}
