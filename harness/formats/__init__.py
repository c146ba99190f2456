"""What every layer reads, writes or serves on, one of each: the readers of the file and
wire formats (one reader per format) and the loopback socket a server of ours is bound to
(`loopback`)."""
