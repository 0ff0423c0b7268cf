print("larder: not yet built")
