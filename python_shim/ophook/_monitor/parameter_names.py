"""Parameters' dotted names as ophook names modules (_torch.names.make_module_namer): the class of
the outermost module, then the attribute path ("Net.fc1.weight", "DistributedDataParallel.module.fc1.weight").
Found by one scan of the live nn.Modules when the monitor meets parameters it cannot name yet."""
import gc


def name_parameters(torch, wanted):
    """{id(parameter): name} for the parameters in `wanted` (ids) that some module holds."""
    module_type = torch.nn.Module
    # type(), not isinstance(): a deprecated module-level object warns when its __class__ is read.
    modules = [obj for obj in gc.get_objects() if issubclass(type(obj), module_type)]
    children = {id(child) for module in modules for child in module.children()}
    names = {}
    for module in modules:
        if id(module) in children:
            continue
        root = type(module).__name__
        for name, parameter in module.named_parameters():
            if id(parameter) in wanted and id(parameter) not in names:
                names[id(parameter)] = "%s.%s" % (root, name)
    return names
