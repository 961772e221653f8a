"""ophook's half in PyTorch: the function and dispatch modes that record torch calls (modes, with
their classes and call names), the read-back of values on a device (device), and compiled code's
recording (compiled_kernels, dynamo_stand_ins). Empty on purpose: `import ophook._torch.modes`
loads only what that module imports."""
