// gomemcache (github.com/bradfitz/gomemcache), used as its users do,
// against hsd's memcached port.
module github.com/hsd-project/hsd/compat/memcached/go

go 1.26

require github.com/bradfitz/gomemcache v0.0.0-20260422231931-4d751bb6e37c
