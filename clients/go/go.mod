// The Go HandlerSocket client of hsd (package handlersocket): standard library only.
module github.com/hsd-project/hsd/clients/go

go 1.26
