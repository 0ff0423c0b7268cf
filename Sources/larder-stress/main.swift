print("larder-stress: not yet built")
