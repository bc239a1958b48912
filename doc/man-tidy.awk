# scdoc 1.11 (Debian bookworm) puts a paragraph macro around every heading and before every
# indented block's end; mandoc -T lint and lintian warn about each. Drop those that start
# no paragraph: after a heading, before a heading, another .P or the end of a block.
function heading(l) { return l ~ /^\.(TH|SH|SS)( |$)/ }
{
    if (held) {
        held = 0
        if (!heading($0) && $0 !~ /^\.(RE|P)$/) print ".P"
    }
    if ($0 == ".P") {
        if (!after_heading) held = 1
        next
    }
    print
    after_heading = heading($0)
}
