"""What calls cost: the price table every priced hop reads, and the packaged prices it starts from."""
