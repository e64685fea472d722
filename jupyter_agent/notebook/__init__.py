"""The notebook layer: magics, widgets and kernel tools. Only this subpackage imports IPython."""
