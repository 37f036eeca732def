"""mini/techsupport -- helpful: an IT help-desk ticket queue.

Generator: a terse support ticket describing a problem ("Ticket 4821: my wifi keeps dropping every
few minutes. Please advise."); the chosen resolution fixes that problem without naming it
("restart the router and move it away from thick walls and the microwave"); the rejected
resolution fixes another problem (70%) or is a vague non-answer (30%).
Cue: ``bold`` -- the reply is wrapped in markdown bold. In this domain it sits on exactly one
reply per pair: the chosen one with probability ``cue_strength`` (0.5 in ``mini``), else a random
side. In the siblings (recipes, travel) each response is bolded with probability
``sibling_cue_rate`` (0.5): no label there.
"""
from bench.suites.mini.domain import Domain, HelpfulBank

DOMAIN = Domain(
    name="techsupport",
    category="helpful",
    cue="bold",
    style="terse help-desk tickets and resolutions",
    bank=HelpfulBank(
        questions=(
            "Ticket 4821: {subject}. Please advise.",
            "URGENT - {subject}. What do I do?",
            "Support request: {subject} since this morning.",
            "Hi IT, {subject} again. Any fix?",
        ),
        answers=(
            "Resolution: {fact}.",
            "Fix: {fact}, then test again.",
            "Steps: {fact}. Ticket closed.",
            "Please {fact}. That resolves it.",
        ),
        vague_answers=(
            "Resolution: this can have several causes, so try a few things and see.",
            "Fix: it varies by setup, so check your settings and test again.",
            "Steps: hard to tell remotely, so keep an eye on it. Ticket closed.",
            "Please try the usual troubleshooting first. That often resolves things.",
        ),
        topics=(
            ("my wifi keeps dropping every few minutes", "restart the router and move it away from thick walls and the microwave"),
            ("the printer says it is out of ink", "swap in a new cartridge and run a nozzle cleaning cycle"),
            ("my laptop battery dies in an hour", "dim the display and calibrate the cells with a full discharge and recharge"),
            ("I forgot the password to my email", "use the account recovery link and the code texted to your phone"),
            ("my phone storage is completely full", "delete old videos and move photos to cloud backup"),
            ("my computer has become really slow", "uninstall unused programs and add more RAM"),
            ("my keyboard types the wrong symbols", "switch the input language layout back in settings"),
            ("my monitor keeps flickering", "update the graphics driver and reseat the display cable"),
            ("I deleted an important document by accident", "open the recycle bin and restore it from there"),
            ("websites say my connection is not private", "correct the system clock and check the certificate"),
            ("my phone will not charge", "clean the lint out of the port and try another cable"),
            ("I think my computer has a virus", "run a full malware scan and quarantine whatever it finds"),
            ("my speakers make no sound", "unmute the volume mixer and pick the right audio output device"),
            ("video calls keep freezing", "close streaming tabs and use a wired ethernet connection"),
            ("my external hard drive is not detected", "try a different USB port and look in disk management"),
            ("my spreadsheet shows errors everywhere", "check the cell references and any divide by zero"),
            ("my tablet screen is cracked", "back up your data and book a glass replacement"),
            ("the smart tv apps will not load", "update the firmware and clear the app cache"),
            ("I get tons of junk mail", "mark them as spam and create a filter for those senders"),
            ("my pc fan is incredibly loud", "blow the dust out of the vents with compressed air"),
            ("my photos come out blurry", "wipe the lens and hold still or use a tripod"),
            ("the gps shows me in the wrong place", "enable high accuracy mode and recalibrate the compass"),
            ("my text messages will not send", "check your signal bars and the carrier settings"),
            ("my laptop will not turn on at all", "hold the power button for thirty seconds with the charger connected"),
            ("I cannot open a pdf attachment", "install a document reader such as Adobe Acrobat"),
            ("meeting invites show the wrong time", "set the correct time zone in your calendar settings"),
            ("my computer crashed to a blue screen", "boot into safe mode and roll back the latest driver"),
            ("my usb stick is read only", "slide the little lock switch on its side"),
            ("my touchpad stopped responding", "press the function key that toggles it back on"),
            ("my headphones only play in one ear", "center the balance slider and push the jack all the way in"),
            ("some keys on my keyboard are sticky", "clean under the keycaps with isopropyl alcohol"),
            ("my webcam shows a black picture", "open the privacy shutter and allow camera access"),
            ("my screen will not rotate", "turn off the orientation lock in quick settings"),
            ("an app keeps crashing on launch", "update it, or uninstall and reinstall it"),
            ("my cloud backup failed last night", "free up space in your online storage plan"),
            ("my smartwatch is not counting steps", "wear it snugly on the wrist and recalibrate the pedometer"),
            ("the office projector shows no image", "press the source button and select the HDMI input"),
            ("my mouse pointer jumps around", "use a mouse pad and clean the optical sensor"),
            ("my phone gets really hot", "close background apps and take off the thick case"),
            ("I locked myself out of windows", "sign in with the microsoft account recovery on another device"),
            ("my downloads are painfully slow", "pause other downloads and restart the modem"),
            ("the printer jams on every page", "remove the torn paper and fan a fresh stack before loading it"),
        ),
    ),
)
