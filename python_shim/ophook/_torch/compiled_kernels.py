"""OPHOOK_COMPILE=record: torch.compile'd code runs compiled, and each kernel its Inductor-generated
code launches is recorded at level `compiled`.

Inductor writes a Python module per compiled graph whose `call()` launches the graph's kernels
(fused C++ or Triton kernels, module globals; extern kernels through `extern_kernels.<name>`).
When such a module is loaded (PyCodeCache.load_by_key_path, every compile), its kernel globals are
replaced by ophook launchers (C++: _ophook.torch_compiled_kernel) that run the same kernel with
the same arguments and record the launch: the buffers it reads as inputs, those it writes as
outputs. Nothing in the generated code or the kernels changes. What each kernel computes (its
aten ops) and the user's lines it comes from are Inductor's provenance tracking
(config.trace.provenance_tracking_level = 1: metadata only); a graph loaded from Inductor's caches
would come without it, so the caches are off while recording.
"""
import json
import os
import re

from .. import _import_hooks, _ophook

_AOT_ID = re.compile(r"^# AOT ID: \['([^']*)'\]", re.M)
_CPP_KERNEL = re.compile(r"^(\w+) = async_compile\.cpp_pybinding\(\[[^\]]*\], r'''(.*?)'''\)", re.M | re.S)
_SIGNATURE = re.compile(r'extern "C"\s+(?:\w+\s+)*void\s+kernel\(([^)]*)\)', re.S)
_TRITON_KERNEL = re.compile(r"^(\w+) = async_compile\.triton\('\w+', '''(.*?)'''", re.M | re.S)
_TRITON_SIGNATURE = re.compile(r"^def \w+\(([^)]*)\):", re.M)
_HANDLE = re.compile(r"^# \[Provenance debug handles\] (\S+)$")
_ATEN = re.compile(r"Original ATen: \[([^\]]*)\]")
_ALIAS = re.compile(r"\bauto\s+(\w+)\s*=\s*(in_out_ptr\d+)\s*;")  # a C++ kernel's other name for a pointer
_EXTERN_CALL = re.compile(r"^(?:(\w+) = )?extern_kernels\.(\w+)\((.*)\)$")
_KERNEL_CALL = re.compile(r"^(\w+)(\.run)?\((.*)\)$")  # a C++ kernel's call, a Triton kernel's run
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_RESUMED = re.compile(r"^torch_dynamo_resume_in_(\w+?)_at_\d+$")

_installed = False
_undo = []  # what uninstall() puts back, in order


def install():
    """Under OPHOOK_COMPILE=record: once Inductor's code cache is imported, instrument each
    generated module it loads."""
    global _installed
    if _installed:
        return
    _installed = True
    _import_hooks.when_imported("torch._inductor.codecache", _hook_code_cache)


def uninstall():
    """Puts back Inductor's loader and configuration. Modules loaded meanwhile keep their
    launchers, which record nothing once recording is off."""
    global _installed
    while _undo:
        _undo.pop()()
    _installed = False


def _hook_code_cache(codecache):
    if not _installed:
        return
    from torch._inductor import config

    # The generated modules are Inductor's code, not the program's: a launch's source is found
    # below them.
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    _ophook.add_library_directory(cache_dir())
    settings = [(config.trace, "provenance_tracking_level", 1), (config, "fx_graph_cache", False)]
    if hasattr(config, "autograd_cache"):
        settings.append((config, "autograd_cache", False))
    for owner, name, value in settings:
        _undo.append(lambda owner=owner, name=name, old=getattr(owner, name): setattr(owner, name, old))
        setattr(owner, name, value)
    cache = codecache.PyCodeCache
    original = cache.__dict__["load_by_key_path"].__func__
    _undo.append(lambda: setattr(cache, "load_by_key_path", classmethod(original)))

    def load_by_key_path(cls, *args, **kwargs):
        module = original(cls, *args, **kwargs)
        try:
            instrument(module)
        except Exception as error:  # a generated module of a shape not known here: left as it is
            _ophook.log("warn", "OPHOOK_COMPILE=record: kernels of %s not recorded (%s: %s)"
                        % (getattr(module, "__file__", module), type(error).__name__, error))
        return module

    load_by_key_path.__wrapped__ = original
    cache.load_by_key_path = classmethod(load_by_key_path)


def instrument(module):
    """Replaces the kernels `module.call()` launches by recording launchers (once per module)."""
    if getattr(module, "__ophook_recorded__", False) or not callable(getattr(module, "call", None)):
        return
    module.__ophook_recorded__ = True
    path = getattr(module, "__file__", None)
    if not path:
        return
    with open(path, encoding="utf-8") as source_file:
        source = source_file.read()
    aot = _AOT_ID.search(source)
    prefix = "inductor.%s." % (aot.group(1) if aot and aot.group(1) else "graph")
    parameters = {name: _kernel_parameters(body) for name, body in _CPP_KERNEL.findall(source)}
    triton = {name: _triton_parameters(body) for name, body in _TRITON_KERNEL.findall(source)}
    parameters.update(triton)
    graph_nodes = _graph_nodes()
    # One launcher per kernel, with every site that launches it: the same fused kernel serves
    # each layer, extern_kernels.mm every matrix product, each site with its own provenance.
    sites = {}
    for site in _call_sites(source, parameters):
        site["provenance"] = _provenance(site["handle"], site["aten"], graph_nodes)
        sites.setdefault((site["kernel"], site["extern"]), []).append(site)
    externs = {}
    for (kernel, extern), kernel_sites in sites.items():
        if extern:
            target = getattr(module.extern_kernels, kernel)
            externs[kernel] = _launcher(target, prefix + "extern_kernels." + kernel, True, kernel_sites)
        elif kernel in triton and not isinstance(module.__dict__.get(kernel), _TritonKernel):
            original = module.__dict__[kernel]
            module.__dict__[kernel] = _TritonKernel(original, _launcher(original.run, prefix + kernel, False,
                                                                        kernel_sites))
        elif kernel in parameters and not isinstance(module.__dict__.get(kernel), _ophook.KernelLauncher):
            module.__dict__[kernel] = _launcher(module.__dict__[kernel], prefix + kernel, False, kernel_sites)
    if externs:
        module.extern_kernels = _Externs(module.extern_kernels, externs)


class _Externs:
    """The generated module's `extern_kernels`: ophook's launchers for the extern kernels its call()
    uses, Inductor's own namespace for anything else."""

    def __init__(self, real, launchers):
        self.__dict__.update(launchers)
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)


class _TritonKernel:
    """A Triton kernel of the generated module: its launches (`run`) recorded, anything else
    Inductor's kernel object's own."""

    def __init__(self, kernel, run):
        self.run = run
        self._kernel = kernel

    def __getattr__(self, name):
        return getattr(self._kernel, name)


def _launcher(kernel, name, extern, sites):
    described = []
    for site in sites:
        computes, sources, modules = site["provenance"]
        annotation = '"computes":%s,"sources":%s,"modules":%s' % (
            json.dumps(computes), json.dumps(["%s:%d:%s" % frame for frame in sources]), json.dumps(modules))
        file, line, function = sources[0] if sources else ("", 0, "")
        described.append((site["line"], annotation, site.get("reads", []), site.get("writes", []), file, function,
                          line))
    return _ophook.torch_compiled_kernel(kernel, name, extern, described)


def _kernel_parameters(kernel_source):
    """(name, read) of a fused C++ kernel's parameters, in order (see _reads_before_writing)."""
    signature = _SIGNATURE.search(kernel_source)
    if signature is None:
        return []
    body = kernel_source[signature.end():]
    parameters = []
    for declaration in signature.group(1).split(","):
        words = declaration.replace("*", " * ").split()
        if words:
            parameters.append((words[-1], _reads_before_writing(words[-1], body)))
    return parameters


def _triton_parameters(kernel_source):
    """(name, read) of a Triton kernel's parameters, in order (constexpr ones are not
    passed; see _reads_before_writing)."""
    signature = _TRITON_SIGNATURE.search(kernel_source)
    if signature is None:
        return []
    body = kernel_source[signature.end():]
    names = [part.split(":")[0].strip() for part in signature.group(1).split(",")]
    return [(name, _reads_before_writing(name, body)) for name in names if name]


def _reads_before_writing(pointer, body):
    """Whether the kernel reads what the buffer held before it ran. in_ptr: yes; out_ptr: no;
    in_out_ptr (loaded and stored) when its first access — under any name the kernel gives it
    (`auto out_ptr0 = in_out_ptr0;`) — is a load: a buffer the kernel updates in place (a ReLU on
    the product before it) rather than one it fills first and reads back (a fresh buffer, or a
    dead one's storage taken over, used as scratch). Read, too, when no access is found."""
    if not pointer.startswith("in_out_ptr"):
        return not pointer.startswith("out_ptr")
    names = {pointer} | {alias for alias, target in _ALIAS.findall(body) if target == pointer}
    access = re.compile(r"\b(%s)\b" % "|".join(map(re.escape, sorted(names))))
    for found in access.finditer(body):
        # what leads up to the name on its line, and what follows it there
        line_end = body.find("\n", found.end())
        before = body[body.rfind("\n", 0, found.start()) + 1:found.start()]
        after = body[found.end():line_end if line_end >= 0 else len(body)]
        if re.search(r"\bauto\s+$", before) or (re.search(r"\bauto\s+\w+\s*=\s*$", before) and after.strip() == ";"):
            continue  # an alias's declaration (either side), not an access
        if re.search(r"\.store\(\s*$", before) or re.match(r"\s*\[[^\]]*\]\s*=(?!=)", after):
            return False
        return True
    return True


def _call_sites(source, parameters):
    """The kernel launches of call(), in order: kernel name, extern or not, the line of the module
    that launches it, provenance handle and ATen comment, and for a fused kernel which positional
    arguments it reads (the pointers whose content it reads, see _reads_before_writing) and writes
    (out_ptr and in_out_ptr)."""
    start = source.find("    def call(self, args):")
    if start < 0:
        start = source.find("def call(args):")
    if start < 0:
        return []
    lines = source[start:].splitlines()[1:]
    first_line = source.count("\n", 0, start) + 2  # the module's line number of lines[0]
    indent = None
    handle = aten = None
    for number, raw in enumerate(lines, first_line):
        if not raw.strip():
            continue
        current = len(raw) - len(raw.lstrip())
        if indent is None:
            indent = current
        if current < indent:
            break
        line = raw.strip()
        if line.startswith("#"):
            found = _HANDLE.match(line)
            if found:
                handle = found.group(1)
            found = _ATEN.search(line)
            if found:
                aten = [name.strip() for name in found.group(1).split(",") if name.strip()]
            continue
        found = _EXTERN_CALL.match(line)
        if found:
            yield {"kernel": found.group(2), "extern": True, "line": number, "handle": handle, "aten": aten}
            handle = aten = None
            continue
        found = _KERNEL_CALL.match(line)
        if found and found.group(1) in parameters:
            reads, writes = [], []
            for index, (name, read) in enumerate(parameters[found.group(1)]):
                if read:
                    reads.append(index)
                if name.startswith(("in_out_ptr", "out_ptr")):
                    writes.append(index)
            yield {"kernel": found.group(1), "extern": False, "line": number, "handle": handle, "aten": aten,
                   "reads": reads, "writes": writes}
            handle = aten = None


def _provenance(handle, aten, graph_nodes):
    """(aten ops, [(file, line, function)], modules) of a kernel from Inductor's provenance
    tracking: the post-grad FX nodes it computes (`graph_nodes`: the graph being compiled, by
    name), the user's lines they come from and the modules they run in."""
    from torch._inductor import debug

    nodes = getattr(debug, "_inductor_triton_kernel_to_post_grad_node_info", {}).get(handle, []) if handle else []
    traces = getattr(debug, "_inductor_kernel_stack_trace", {}).get(handle, []) if handle else []
    computes, modules = list(aten or []), []
    for name in nodes:
        node = graph_nodes.get(name)
        if not aten:
            op = _op_of(node) if node is not None else "aten." + re.sub(r"_\d+$", "", name)
            if op and op not in computes:
                computes.append(op)
        module = _module_of(node) if node is not None else None
        if module and module not in modules:
            modules.append(module)
    sources, library = [], _library_directories()
    for trace in traces:
        # The innermost frame of the program's: Dynamo traced through torch's and ophook's own
        # Python too (the mode's __torch_function__ under this policy).
        frames = [frame for frame in _FRAME.findall(trace) if not frame[0].startswith(library)]
        if frames:
            file, line, function = frames[-1]
            # after a graph break Dynamo runs the rest of the function as a resume function
            function = _RESUMED.sub(r"\1", function)
            if (file, int(line), function) not in sources:
                sources.append((file, int(line), function))
    return computes, sources, modules


def _graph_nodes():
    """The nodes of the graph Inductor is compiling now, by name (it loads the module it generated
    for the graph before it returns); empty when there is none."""
    try:
        from torch._inductor.virtualized import V

        return {node.name: node for node in V.graph.graph.nodes}
    except Exception:  # a module loaded outside a compile (a cache load): names only
        return {}


def _op_of(node):
    """"aten.addmm" for a call of aten.addmm.default; None for what computes nothing (getitem)."""
    target = getattr(node, "target", None)
    packet = getattr(target, "_overloadpacket", None)
    if packet is not None:
        return str(packet)
    return None


def _module_of(node):
    """The module a node's op runs in, as its path below the compiled callable: Dynamo's innermost
    nn_module_stack entry without its root ("L['self'].transformer.h.0" → "transformer.h.0")."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return None
    path = list(stack.values())[-1][0]
    path = re.sub(r"^L\[[^\]]*\]\.?", "", str(path))
    return path or None


def _library_directories():
    import torch

    return (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(os.path.abspath(__file__)) + os.sep)
