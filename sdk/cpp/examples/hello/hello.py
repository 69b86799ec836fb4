def main(event):
    name = (event or {}).get("name", "world")
    print(f"saying hello to {name}")
    return {"greeting": f"hello, {name}"}
