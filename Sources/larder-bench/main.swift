print("larder-bench: not yet built")
