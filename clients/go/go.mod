module idforge.dev/client

go 1.19
