"""`--format junit`: JUnit XML, one <testsuite> per checked file with findings and one
<testcase> (with a <failure>) per finding, as ruff does; a clean run is one passing testcase."""
from collections import OrderedDict
from xml.etree import ElementTree as ET

from kvlint.report import Report, plural


def render(report: Report) -> str:
    suites = ET.Element("testsuites", name="kvlint", tests=str(max(len(report.findings), 1)),
                        failures=str(len(report.findings)), errors=str(len(report.errors)))
    by_file = OrderedDict()
    for f in report.findings:
        by_file.setdefault(f.path, []).append(f)
    for path, findings in by_file.items():
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(len(findings)),
                              failures=str(len(findings)), errors="0")
        for f in findings:
            case = ET.SubElement(suite, "testcase", name=f"{f.code} at {path}:{f.line}:{f.column}",
                                 classname=path, file=path, line=str(f.line))
            fail = ET.SubElement(case, "failure", message=f.message, type=f.code)
            fail.text = f"{path}:{f.line}:{f.column}: {f.code} {f.message}"
    if report.errors:
        suite = ET.SubElement(suites, "testsuite", name="kvlint internal errors",
                              tests=str(len(report.errors)), failures="0", errors=str(len(report.errors)))
        for n, e in enumerate(report.errors, 1):
            case = ET.SubElement(suite, "testcase", name=f"internal error {n}", classname="kvlint")
            ET.SubElement(case, "error", message=e).text = e
    if not report.findings and not report.errors:
        suite = ET.SubElement(suites, "testsuite", name="kvlint", tests="1", failures="0", errors="0")
        ET.SubElement(suite, "testcase", name=f"{plural(report.files, 'file')} checked", classname="kvlint")
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
