"""PyTorch capture policy: which modes exist, on which threads they are pushed, what torch.compile does.

The modes are empty shells: each class's handler is a C++ builtin bound to its one instance
(_ophook.torch_bound_handler), which resolves the op once per func object,
decides whether to record, snapshots the inputs, runs func and records the result; no Python
runs per op. The module path of each record comes from a C++ per-thread stack fed by torch's
global nn.Module forward hooks (also C++ functions).
"""
import atexit
import json
import os
import re
import sys
import threading
import types
import warnings

from .. import _collectives, _import_hooks, _monitor, _ophook
from .._ranks import rank_signals as _rank_signals
from . import dynamo_stand_ins as _dynamo_stand_ins
from .mode_classes import dispatch_mode_class, function_mode_class, new_mode
from .names import dispatch_name, function_name, make_module_namer

_installation = None  # the active _Installation, or None


# ---- installation -------------------------------------------------------------------------------

class _Installation:
    """Everything install() changed, so that uninstall() undoes exactly that."""

    def __init__(self, torch, levels, compile_policy, check_backward):
        self.torch = torch
        self.compile_policy = compile_policy
        # Under record, as under ignore, compiled regions compile as if the modes were absent.
        ignore = compile_policy in ("ignore", "record")
        self.function_mode = (new_mode(function_mode_class(torch), "torch_function")
                              if "torch_function" in levels else None)
        self.dispatch_mode = (new_mode(dispatch_mode_class(torch, ignore), "torch_dispatch")
                              if "torch_dispatch" in levels else None)
        # OPHOOK_NAN with only the torch_function level: around each backward pass the function
        # mode's handler hooks the autograd graph's nodes, which check what they compute for a
        # NaN/Inf's birth and record only that culprit (src/python/torch/backward_check.hpp).
        self.check_backward_nodes = (check_backward and self.function_mode is not None
                                     and self.dispatch_mode is None)
        self.owner_thread = threading.get_ident()
        self.hook_handles = []
        self.jit_state = threading.local()
        self.window_state = threading.local()
        self.warned_about_jit = False
        self.original_bootstrap = None
        self.stance = None

    # -- per thread --
    def push_here(self, owner):
        C = self.torch._C
        if self.function_mode is not None:
            C._push_on_torch_function_stack(self.function_mode)
        if self.dispatch_mode is not None:
            if owner:
                self.dispatch_mode.__enter__()  # also sets torch's process-wide "in a dispatch mode" flags
            else:
                C._push_on_torch_dispatch_stack(self.dispatch_mode)

    def pop_here(self, owner):
        if self.dispatch_mode is not None:
            _remove_dispatch_mode(self.torch, self.dispatch_mode, owner)
        if self.function_mode is not None:
            _remove_function_mode(self.torch, self.function_mode)

    # -- process wide --
    def wrap_threads(self):
        original = threading.Thread._bootstrap_inner
        installation = self

        def _bootstrap_inner(thread):
            pushed = False
            try:
                installation.push_here(owner=False)
                pushed = True
            except Exception:
                pass
            try:
                original(thread)
            finally:
                if pushed:
                    try:
                        installation.pop_here(owner=False)
                    except Exception:
                        pass

        _bootstrap_inner.__wrapped__ = original
        self.original_bootstrap = original
        threading.Thread._bootstrap_inner = _bootstrap_inner

    def unwrap_threads(self):
        if self.original_bootstrap is not None:
            threading.Thread._bootstrap_inner = self.original_bootstrap
            self.original_bootstrap = None

    def hook_modules(self, collectives):
        """Global nn.Module forward hooks (the module stack behind `module`) and optimizer step
        hooks (the "optimizer" phase and `step`), all C++ functions; the rank watcher where the
        rank or the job's store is not learned otherwise (no RANK, or no collective level). Under OPHOOK_COMPILE=ignore
        and record each is wrapped in a function that returns at once while Dynamo traces, so
        that compiled modules compile as they would unhooked (a C function Dynamo cannot trace is
        a graph break). A stand-in as the mode's handler has (dynamo_stand_ins) does not do here:
        a compiled module's hooks run inside its compiled region, where the C++ hook would call
        back into Python (the module namer) and Dynamo would take that frame for the module's."""
        from torch.nn.modules import module as nn_module
        from torch.optim import optimizer as optim_module

        hook = self._compile_safe if self.compile_policy != "eager" else (lambda function, while_compiling=None: function)
        self.hook_handles = [
            nn_module.register_module_forward_pre_hook(hook(_ophook.torch_module_enter)),
            nn_module.register_module_forward_hook(hook(_ophook.torch_module_exit), always_call=True),
            optim_module.register_optimizer_step_pre_hook(hook(_ophook.torch_optimizer_enter, _enter_compiled_step)),
            optim_module.register_optimizer_step_post_hook(hook(_ophook.torch_optimizer_exit, _count_compiled_step)),
        ]
        if not os.environ.get("RANK") or not collectives:
            self.hook_handles.append(optim_module.register_optimizer_step_post_hook(hook(_rank_watcher())))
        # torch.compile(module) warns whenever any global module hook exists; these are ophook's.
        warnings.filterwarnings("ignore", message=re.escape(_dynamo_stand_ins.COMPILED_MODULE_WARNING),
                                category=UserWarning)
        traced_module = getattr(getattr(self.torch, "jit", None), "TracedModule", None)
        if self.dispatch_mode is not None and traced_module is not None:
            _ophook.torch_set_jit_guard(self.torch._C._get_tracing_state, traced_module, self._jit_guard)

    def track_backward_modules(self):
        """Backward ops get the module whose forward they differentiate, as
        torch.utils.module_tracker finds it: the module hooks give each forward's inputs and
        outputs to this tracker (C++ runs it unrecorded), which hooks their gradients to enter and
        leave the module's backward (src/python/torch/backward_modules.hpp: not with
        register_multi_grad_hook, whose "all" mode leaks). Paid per module forward, only while
        gradients are on, and only when backward ops are recorded or checked (torch_dispatch level,
        OPHOOK_NAN)."""
        torch = self.torch
        from torch.utils._pytree import tree_leaves

        tensor_type, grad_enabled, backward_hook = torch.Tensor, torch.is_grad_enabled, _ophook.torch_backward_hook
        # With ophook's function mode on, every requires_grad and register_hook would pass through
        # torch's handle_torch_function and the mode: twice the tracker's cost, per module forward.
        no_function_modes = torch._C.DisableTorchFunction

        def tracker(module, values, is_output):
            if not grad_enabled():
                return
            with no_function_modes():
                if isinstance(values, tensor_type):
                    values = (values,)
                elif type(values) is not tuple or not all(isinstance(v, tensor_type) for v in values):
                    values = tree_leaves(values)  # containers and pytree nodes (a ModelOutput) inside
                tensors = [t for t in values if isinstance(t, tensor_type) and t.requires_grad]
                if tensors:
                    hook = backward_hook(module, is_output, len(tensors))
                    for tensor in tensors:
                        tensor.register_hook(hook)

        # Releases without _current_graph_task_id: a forward's hooks then count across passes, so a
        # second backward through the same graph (retain_graph) names no module of it.
        _ophook.torch_track_backward_modules(tracker, torch.autograd.Variable._execution_engine.queue_callback,
                                             getattr(torch._C, "_current_graph_task_id", None))

    def _compile_safe(self, function, while_compiling=None):
        """`function` as a hook that does nothing Dynamo would see while it traces, or only
        `while_compiling()`, which must compile to no graph node."""
        compiling = self.torch.compiler.is_compiling

        def unless_compiling(*args, _function=function, _compiling=compiling, _instead=while_compiling):
            if _compiling():
                if _instead is not None:
                    _instead()
                return None
            return _function(*args)

        unless_compiling.__name__ = "ophook_" + function.__name__
        return unless_compiling

    def _jit_guard(self, module, entering):
        """torch.jit.trace loses the graph of ops that reach any TorchDispatchMode ("Cannot insert a
        Tensor that requires grad as a constant"), and TorchScript fails to run a traced graph
        under one ("aten::equal() Expected a value of type 'Tensor'"). So the dispatch mode leaves
        this thread's stack while a module is traced, until torch.jit.trace(module) has returned
        (its checks run the graph), and while a traced module runs; the first forward after that
        puts it back. Called by the module hooks (see torch_set_jit_guard); returns whether it
        wants to be called at every forward's start and end."""
        torch, state = self.torch, self.jit_state
        aside, depth = getattr(state, "aside", False), getattr(state, "traced_depth", 0)
        if isinstance(module, torch.jit.TracedModule):
            depth = max(0, depth + (1 if entering else -1))
            state.traced_depth = depth
        tracing = (torch._C._get_tracing_state() is not None
                   or getattr(torch.jit._trace, "_trace_module_map", None) is not None)
        if (tracing or depth > 0) and not aside:
            aside = _remove_dispatch_mode(torch, self.dispatch_mode, owner=False)
            if aside and not self.warned_about_jit:
                self.warned_about_jit = True
                _ophook.log("warn", "torch.jit: the torch_dispatch level steps aside while a module is traced and "
                                    "while a traced module runs (PyTorch runs neither under a TorchDispatchMode); "
                                    "those ops are not recorded at that level")
                _ophook.add_note("jit", json.dumps("the torch_dispatch level stepped aside while torch.jit.trace "
                                                   "traced modules and while traced modules ran"))
        elif not (tracing or depth > 0) and aside:
            from torch.utils._python_dispatch import _push_mode
            _push_mode(self.dispatch_mode)
            aside = False
        state.aside = aside
        return aside or depth > 0

    def open_backward_window(self):
        """The monitor alone: the function mode is on the stack only where backward() is called
        (src/python/torch/backward_window.hpp), not on the forward's and the optimizer's calls."""
        state, torch, mode = self.window_state, self.torch, self.function_mode

        def leave():
            state.index = _remove_function_mode(torch, mode)
            return state.index is not None

        def enter():
            _insert_function_mode(torch, mode, state.index)

        _ophook.torch_set_backward_window(leave, enter)

    def unhook_modules(self):
        _ophook.torch_set_backward_window(None, None)
        _ophook.torch_set_jit_guard(None, None, None)
        _ophook.torch_set_backward_check(False, None)
        _ophook.torch_track_backward_modules(None, None, None)
        for handle in self.hook_handles:
            handle.remove()
        self.hook_handles = []

    def apply_compile_policy(self):
        _import_hooks.when_imported("torch._dynamo", self._on_dynamo)
        if self.compile_policy == "eager":
            note = {"policy": "eager",
                    "detail": "torch.compile'd code runs eagerly (Dynamo stance force_eager): every op is recorded"}
        elif self.compile_policy == "record":
            from . import compiled_kernels as _compiled_kernels

            _compiled_kernels.install()
            note = {"policy": "record",
                    "detail": "torch.compile'd callables run compiled; each kernel their generated code launches "
                              "is recorded at level compiled, the torch calls inside them at no other level"}
        else:
            note = {"policy": "ignore",
                    "detail": "torch.compile'd callables run compiled; nothing that runs inside them "
                              "(compilation, compiled code, calls it makes back into torch) is recorded"}
        _ophook.add_note("compile", json.dumps(note))

    def _give_stand_ins(self):
        """Under ignore and record: has Dynamo trace a stand-in in place of the function mode's
        handler. False, with a warning, where this torch cannot."""
        torch = self.torch
        try:
            if not _dynamo_stand_ins.available(torch):
                raise RuntimeError("torch %s has no torch.compiler.substitute_in_graph (torch 2.5 on)"
                                   % torch.__version__)
            if self.function_mode is not None:
                handler = type(self.function_mode).__dict__["__torch_function__"]
                _dynamo_stand_ins.give_stand_in(torch, handler, _dynamo_stand_ins.run_the_op)
        except Exception as error:
            _ophook.log("warn", "OPHOOK_COMPILE=%s: Dynamo cannot be shown ophook's handler as absent (%s); "
                                "torch.compile'd code runs eagerly, as under OPHOOK_COMPILE=eager"
                        % (self.compile_policy, error))
            _ophook.add_note("compile", json.dumps({
                "policy": "eager", "asked": self.compile_policy,
                "detail": "torch.compile'd code runs eagerly (Dynamo stance force_eager): %s" % error}))
            return False
        return True

    def _on_dynamo(self, dynamo):
        """Once torch._dynamo is imported (torch.compile's first use): under ignore and record,
        compiled code compiles as if ophook were absent and its regions are marked; under eager
        (or where the stand-ins cannot be had) compiled functions run eagerly."""
        if _installation is not self:
            return
        if self.compile_policy != "eager" and self._give_stand_ins():
            markers = _compiled_region_codes()
            if not markers:
                _ophook.log("warn", "OPHOOK_COMPILE=%s: Dynamo's compile_wrapper not found in torch %s; "
                            "calls made by compiled code are recorded" % (self.compile_policy, self.torch.__version__))
            _ophook.torch_set_compiled_region_markers(markers)
            return
        try:
            self.stance = dynamo.set_stance("force_eager")
        except Exception as error:  # e.g. imported inside a compiled region
            _ophook.log("warn", "OPHOOK_COMPILE=eager: could not set Dynamo's stance (%s)" % error)
            return
        _ophook.torch_notice_compiled_calls(_compiled_region_codes())

    def restore_compile_policy(self):
        _ophook.torch_set_compiled_region_markers([])
        _ophook.torch_notice_compiled_calls([])
        if self.compile_policy == "record":
            from . import compiled_kernels as _compiled_kernels

            _compiled_kernels.uninstall()
        if self.stance is not None:
            try:
                from torch._dynamo.eval_frame import _set_stance

                _set_stance(self.stance.prev)
            except Exception:
                pass
            self.stance = None


class _StepMark(types.ModuleType):
    """Where compiled code says that it entered or completed optimizer steps. A compiled
    optimizer.step() runs its hooks only while Dynamo traces it, so the step counter would never
    move (`step` and OPHOOK_STEPS stuck) and its kernels would not be in the optimizer phase.
    Dynamo replays a write to a module's attribute after the graph it traced, as a plain
    STORE_ATTR, without looking at the module's type; this type's __setattr__ is C++, so the write
    enters or completes the steps at run time, with no graph node, no graph break and no Python
    frame. torch.optim breaks the graph before and after a step's body, so the pre-hook's write
    runs before the step's kernels and the post-hook's after them; in one graph, writes replay in
    the order made. Nothing is stored: the attributes read 0 at every trace, so their guards always
    hold, and a graph that traced two steps (two optimizers) writes 2."""
    entered = 0
    completed = 0
    __setattr__ = staticmethod(_ophook.torch_compiled_optimizer_mark)


_compiled_steps = _StepMark("ophook._compiled_steps")


def _enter_compiled_step():
    _compiled_steps.entered = _compiled_steps.entered + 1


def _count_compiled_step():
    _compiled_steps.completed = _compiled_steps.completed + 1


def _rank_watcher():
    """An optimizer step post-hook for a process started without RANK (a torch.multiprocessing.spawn
    worker): at the end of each step until it finds one, it looks for the rank the process learned
    since — torch.distributed's once initialised, else a RANK the program set — and hands it to the
    recorder, which names a child process's directory rank<R>/ after it and selects or leaves out
    the process (OPHOOK_RANKS); then the watcher retires. One Python call per step: the first
    step's end is the first point after init_process_group that every training loop reaches. It
    also starts the rank signals there, which the first collective starts otherwise: with no
    collective level (a rank with RANK set is selected at once, so it retires at that step too)."""
    state = {"done": False}

    def watch_rank(optimizer, args, kwargs):
        if state["done"]:
            return
        distributed = sys.modules.get("torch.distributed")
        initialized = distributed is not None and distributed.is_available() and distributed.is_initialized()
        if initialized:
            _rank_signals.start(_ophook)
        selected = _ophook.learn_rank(distributed.get_rank() if initialized else None)
        if selected is None:
            return
        state["done"] = True
        # The rank it holds, for the processes it starts with a copy of os.environ (ProcessRank).
        os.environ.update(_ophook.exported_environment())

    return watch_rank


def _compiled_region_codes():
    """Code objects of the wrapper every torch.compile'd callable runs through (Dynamo's
    compile_wrapper, nested in _TorchDynamoContext.__call__)."""
    from torch._dynamo import eval_frame

    found = []

    def walk(code):
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                if const.co_name == "compile_wrapper":
                    found.append(const)
                walk(const)

    walk(eval_frame._TorchDynamoContext.__call__.__code__)
    return found


def _remove_function_mode(torch, mode):
    """Takes `mode` off this thread's function mode stack, the modes above it kept in order;
    returns the place it had, or None when it was not there."""
    C = torch._C
    places = [i for i in range(C._len_torch_function_stack()) if C._get_function_stack_at(i) is mode]
    if not places:
        return None
    above = [C._pop_torch_function_stack() for _ in range(C._len_torch_function_stack() - places[-1] - 1)]
    C._pop_torch_function_stack()
    for other in reversed(above):
        C._push_on_torch_function_stack(other)
    return places[-1]


def _insert_function_mode(torch, mode, place):
    """Puts `mode` back at `place` on this thread's function mode stack (on top when the stack is
    shorter now), the modes pushed since above it in their order."""
    C = torch._C
    above = [C._pop_torch_function_stack() for _ in range(max(0, C._len_torch_function_stack() - place))]
    C._push_on_torch_function_stack(mode)
    for other in reversed(above):
        C._push_on_torch_function_stack(other)


def _remove_dispatch_mode(torch, mode, owner):
    from torch.utils._python_dispatch import (_get_current_dispatch_mode, _get_current_dispatch_mode_stack,
                                              _pop_mode, _push_mode)

    if not any(m is mode for m in _get_current_dispatch_mode_stack()):
        return False
    above = []
    while _get_current_dispatch_mode() is not mode:
        above.append(_pop_mode())
    if owner:
        mode.__exit__(None, None, None)
    else:
        _pop_mode()
    for other in reversed(above):
        _push_mode(other)
    return True


def _warn_about_unreachable_rules(levels):
    """@ophook.override rules act only at a level that is hooked: say so for the others."""
    from .. import _overrides

    for prefix, level in (("aten.", "torch_dispatch"), ("torch.", "torch_function")):
        names = _overrides.rules_needing(prefix)
        if names and level not in levels:
            _ophook.log("warn", "override%s for %s inactive: OPHOOK_LEVELS does not include %s"
                        % ("s" if len(names) > 1 else "", ", ".join(names), level))


def install(torch):
    """Hooks `torch` (the imported module) with the levels of the running configuration."""
    global _installation
    if _installation is not None:
        return
    config = json.loads(_ophook.config())
    levels = set(config.get("levels", ())) & {"torch_function", "torch_dispatch"}
    collectives = "collective" in config.get("levels", ())
    monitor_alone = not _ophook.records_ops()
    if monitor_alone:
        # The level records nothing: it hands the monitor the loss. The replica check alone needs no mode.
        levels = {"torch_function"} if config.get("monitor") else set()
    _warn_about_unreachable_rules(levels)
    if not levels and not collectives and not monitor_alone:
        return
    _ophook.set_version("torch", torch.__version__)
    _ophook.add_library_directory(os.path.dirname(torch.__file__))
    _ophook.add_library_directory(os.path.dirname(os.path.abspath(__file__)))
    compile_policy = config.get("compile", "eager")
    if not _ophook.torch_setup(torch, function_name, dispatch_name, make_module_namer()):
        _ophook.log("warn", "torch %s: missing internals; torch calls are not recorded" % torch.__version__)
        return
    nan_check = config.get("nan", "off") != "off"
    installation = _Installation(torch, levels, compile_policy, check_backward=nan_check)
    _installation = installation
    installation.hook_modules(collectives)
    _ophook.torch_set_module_filter(config.get("modules", ""))
    if "torch_dispatch" in levels:
        installation.track_backward_modules()
    if installation.check_backward_nodes:
        _ophook.torch_set_backward_check(True, getattr(torch._C._autograd, "_get_sequence_nr", None))
    installation.apply_compile_policy()
    installation.push_here(owner=True)
    if monitor_alone and installation.function_mode is not None:
        installation.open_backward_window()
    installation.wrap_threads()
    if collectives:
        _collectives.install(torch)
    _monitor.install(torch, _ophook, config)
    _ophook.log("debug", "torch %s: modes %s pushed (compile policy %s)"
                % (torch.__version__, ",".join(sorted(levels)), installation.compile_policy))


def uninstall():
    """Pops the modes from the installing thread, removes the module hooks and the thread wrapper,
    restores Dynamo's stance. Threads started meanwhile keep their modes until they end (torch's
    mode stacks are per thread); with recording off those pass calls straight through."""
    global _installation
    installation, _installation = _installation, None
    if installation is None:
        return
    _monitor.uninstall()
    _collectives.uninstall()
    installation.unwrap_threads()
    installation.unhook_modules()
    installation.restore_compile_policy()
    if threading.get_ident() == installation.owner_thread:
        try:
            installation.pop_here(owner=True)
        except Exception as error:
            _ophook.log("warn", "could not pop ophook's torch modes: %s" % error)
    _ophook.torch_reset()


atexit.register(uninstall)  # before interpreter teardown: no mode left on the main thread's stack
