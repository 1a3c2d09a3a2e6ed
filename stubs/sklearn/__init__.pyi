# Stubs for the part of scikit-learn gradtape's examples and benchmarks use (it ships no py.typed).
