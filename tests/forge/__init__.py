"""The forge side (tireless/forge/, the stand-in forge): the clients, the poll loop, the mirror,
and the forge fault run."""
